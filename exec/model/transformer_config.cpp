#include "exec/model/transformer_config.hpp"

#include <stdexcept>
#include <string>

namespace twinsim::exec {

namespace {
void require_divides(const char* what, std::int64_t value, const char* by, int degree) {
  if (degree < 1 || value % degree != 0)
    throw std::invalid_argument(std::string(what) + "=" + std::to_string(value) + " is not divisible by " +
                                by + "=" + std::to_string(degree));
}
}  // namespace

void validate(const TransformerConfig& c) {
  require_divides("model.heads", c.model.heads, "tp", c.tp);
  // the executor shards K/V heads too; replicating them (kv_heads < tp) is not implemented
  require_divides("model.kv_heads", c.model.kv_heads, "tp", c.tp);
  require_divides("model.ffn_hidden", c.model.ffn_hidden, "tp", c.tp);
  require_divides("model.vocab", c.model.vocab, "tp", c.tp);
  if (c.sequence_parallel) require_divides("micro_batch*seq_len", c.tokens(), "tp", c.tp);
  if (c.model.moe) throw std::invalid_argument("model.moe: the executor runs dense models only");
  if (c.learned_positions() && c.seq_len > c.model.max_seq_len)
    throw std::invalid_argument("seq_len=" + std::to_string(c.seq_len) + " exceeds model.max_seq_len=" +
                                std::to_string(c.model.max_seq_len));
  if (c.first_layer < 0 || c.end_layer < c.first_layer || c.end_layer > c.model.layers)
    throw std::invalid_argument("stage layers [" + std::to_string(c.first_layer) + ", " +
                                std::to_string(c.end_layer) + ") outside the model");
}

}  // namespace twinsim::exec
