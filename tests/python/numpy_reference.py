"""An independent float64 re-implementation of the executor's GPT-2 and Llama training step
in numpy, on the Hugging Face tensor layout a merged checkpoint uses
(`twinsim checkpoint merge --names huggingface`), written from the transformers modelling
code and the papers, not from the executor:

  GPT-2: transformers/models/gpt2/modeling_gpt2.py — Conv1D (y = x W + b, W [in, out]),
    q/k/v side by side in c_attn, scores / sqrt(head_dim), causal mask, gelu_new (tanh
    approximation), LayerNorm eps 1e-5, learned positions, the head tied to wte.
  Llama: transformers/models/llama/modeling_llama.py — nn.Linear (y = x W^T), RMSNorm
    x / sqrt(mean(x^2) + eps) * w, RoPE rotate_half with inv_freq theta^(-2i/d), grouped
    keys and values (repeat_kv: query head h reads kv head h // (heads / kv_heads)),
    SwiGLU down(silu(gate(x)) * up(x)), an untied lm_head.
  Loss: the mean next-token cross-entropy over every token of the step.
  AdamW: Loshchilov & Hutter 2019, Alg. 2, with Kingma & Ba's bias corrections; decay on
    matrices only (Megatron's rule: not on biases and norm weights).

Gradients come from a small reverse-mode autodiff over numpy arrays (the `Var` class),
each operation's derivative written by hand; the test checks it against finite
differences before trusting it.
"""
import numpy as np


class Var:
    """A value with a gradient slot and the closure that sends its gradient to its inputs."""

    def __init__(self, value, parents=(), backward=None):
        self.value = np.asarray(value, dtype=np.float64)
        self.grad = None
        self.parents = parents
        self.backward_fn = backward

    # operators build the graph
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return add(self, mul(other, -1.0))

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    @property
    def shape(self):
        return self.value.shape

    def backward(self):
        """Gradients of this scalar with respect to every Var it was computed from."""
        order, seen = [], set()
        stack = [(self, False)]
        while stack:  # iterative post-order DFS: inputs before the values that use them
            v, done = stack.pop()
            if done:
                order.append(v)
                continue
            if id(v) in seen:
                continue
            seen.add(id(v))
            stack.append((v, True))
            stack.extend((p, False) for p in v.parents)
        self.grad = np.ones_like(self.value)
        for v in reversed(order):
            if v.backward_fn is not None and v.grad is not None:
                v.backward_fn(v.grad)


def as_var(x):
    return x if isinstance(x, Var) else Var(x)


def _accumulate(v, g):
    v.grad = g if v.grad is None else v.grad + g


def _unbroadcast(g, shape):
    """Sums a broadcast gradient back down to the input's shape."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def add(a, b):
    a, b = as_var(a), as_var(b)
    out = Var(a.value + b.value, (a, b))
    out.backward_fn = lambda g: (_accumulate(a, _unbroadcast(g, a.shape)), _accumulate(b, _unbroadcast(g, b.shape)))
    return out


def mul(a, b):
    a, b = as_var(a), as_var(b)
    out = Var(a.value * b.value, (a, b))
    out.backward_fn = lambda g: (_accumulate(a, _unbroadcast(g * b.value, a.shape)),
                                 _accumulate(b, _unbroadcast(g * a.value, b.shape)))
    return out


def matmul(a, b):
    """Batched a @ b; b may be a plain matrix shared by the batch."""
    a, b = as_var(a), as_var(b)
    out = Var(a.value @ b.value, (a, b))

    def back(g):
        _accumulate(a, _unbroadcast(g @ np.swapaxes(b.value, -1, -2), a.shape))
        _accumulate(b, _unbroadcast(np.swapaxes(a.value, -1, -2) @ g, b.shape))

    out.backward_fn = back
    return out


def unary(a, f, df):
    """Elementwise f, with df(x) its derivative."""
    a = as_var(a)
    out = Var(f(a.value), (a,))
    out.backward_fn = lambda g: _accumulate(a, g * df(a.value))
    return out


def sigmoid(a):
    s = lambda x: 1.0 / (1.0 + np.exp(-x))
    return unary(a, s, lambda x: s(x) * (1.0 - s(x)))


def tanh(a):
    return unary(a, np.tanh, lambda x: 1.0 - np.tanh(x) ** 2)


def power(a, p):
    return unary(a, lambda x: x ** p, lambda x: p * x ** (p - 1))


def mean(a, axis, keepdims=True):
    a = as_var(a)
    n = a.shape[axis]
    out = Var(a.value.mean(axis=axis, keepdims=keepdims), (a,))
    out.backward_fn = lambda g: _accumulate(
        a, np.broadcast_to((g if keepdims else np.expand_dims(g, axis)) / n, a.shape).copy())
    return out


def reshape(a, shape):
    a = as_var(a)
    out = Var(a.value.reshape(shape), (a,))
    out.backward_fn = lambda g: _accumulate(a, g.reshape(a.shape))
    return out


def transpose(a, axes):
    a = as_var(a)
    out = Var(a.value.transpose(axes), (a,))
    inverse = np.argsort(axes)
    out.backward_fn = lambda g: _accumulate(a, g.transpose(inverse))
    return out


def take(a, index, axis):
    """a's entries `index` (an integer array) along `axis`: an embedding lookup, a slice, repeat_kv."""
    a = as_var(a)
    index = np.asarray(index)
    out = Var(np.take(a.value, index, axis=axis), (a,))

    def back(g):
        full = np.zeros_like(a.value)
        moved = np.moveaxis(full, axis, 0)  # a view: np.add.at on it writes `full`
        np.add.at(moved, index, np.moveaxis(g, list(range(axis, axis + index.ndim)), list(range(index.ndim))))
        _accumulate(a, full)

    out.backward_fn = back
    return out


def concat(parts, axis):
    parts = [as_var(p) for p in parts]
    out = Var(np.concatenate([p.value for p in parts], axis=axis), tuple(parts))

    def back(g):
        start = 0
        for p in parts:
            n = p.shape[axis]
            _accumulate(p, np.take(g, np.arange(start, start + n), axis=axis))
            start += n

    out.backward_fn = back
    return out


def softmax(a):
    """Along the last axis; entries at -inf get probability 0."""
    a = as_var(a)
    z = a.value - a.value.max(axis=-1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=-1, keepdims=True)
    out = Var(p, (a,))
    out.backward_fn = lambda g: _accumulate(a, p * (g - (g * p).sum(axis=-1, keepdims=True)))
    return out


def cross_entropy(logits, targets):
    """Mean over every position of -log softmax(logits)[target]; logits [..., vocab]."""
    logits = as_var(logits)
    flat = logits.value.reshape(-1, logits.shape[-1])
    t = np.asarray(targets).reshape(-1)
    z = flat - flat.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    out = Var(-logp[np.arange(len(t)), t].mean(), (logits,))

    def back(g):
        d = np.exp(logp)
        d[np.arange(len(t)), t] -= 1.0
        _accumulate(logits, (g * d / len(t)).reshape(logits.shape))

    out.backward_fn = back
    return out


# ----------------------------------------------------------------------------- layers

def layer_norm(x, w, b, eps=1e-5):
    mu = mean(x, -1)
    c = x - mu
    return c * power(mean(c * c, -1) + eps, -0.5) * w + b


def rms_norm(x, w, eps=1e-5):
    return x * power(mean(x * x, -1) + eps, -0.5) * w


def gelu_new(x):
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): transformers' NewGELUActivation
    inner = (x + power(x, 3) * 0.044715) * np.sqrt(2.0 / np.pi)
    return x * (tanh(inner) + 1.0) * 0.5


def gelu_erf(x):
    # x Phi(x), the exact GELU (only as a planted bug: GPT-2 uses the tanh form)
    from math import erf
    phi = np.vectorize(lambda z: 0.5 * (1.0 + erf(z / np.sqrt(2.0))))
    return unary(x, lambda z: z * phi(z), lambda z: phi(z) + z * np.exp(-z * z / 2) / np.sqrt(2 * np.pi))


def silu(x):
    return x * sigmoid(x)


def attention(q, k, v, planted=None):
    """q [B, heads, T, d], k/v [B, heads, T, d] (already repeated for GQA): causal softmax."""
    t, d = q.shape[2], q.shape[3]
    scale = 1.0 if planted == "no_scale" else 1.0 / np.sqrt(d)
    scores = matmul(q, transpose(k, (0, 1, 3, 2))) * scale
    mask = np.triu(np.full((t, t), -np.inf), k=1)
    return matmul(softmax(scores + mask), v)


def split_heads(x, heads):
    b, t, width = x.shape
    return transpose(reshape(x, (b, t, heads, width // heads)), (0, 2, 1, 3))


def merge_heads(x):
    b, h, t, d = x.shape
    return reshape(transpose(x, (0, 2, 1, 3)), (b, t, h * d))


def rope(x, theta=10000.0):
    """x [B, heads, T, d], rotate_half layout: pair i with i + d/2, angle pos * theta^(-2i/d)."""
    t, d = x.shape[2], x.shape[3]
    inv_freq = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.outer(np.arange(t, dtype=np.float64), inv_freq)
    cos = np.concatenate([np.cos(angles)] * 2, axis=1)
    sin = np.concatenate([np.sin(angles)] * 2, axis=1)
    half = d // 2
    x1, x2 = take(x, np.arange(half), 3), take(x, np.arange(half, d), 3)
    rotated = concat([x2 * -1.0, x1], axis=3)
    return x * cos + rotated * sin


def rope_interleaved(x, theta=10000.0):
    """Pairs (2i, 2i+1) rotated (RoFormer's own layout; only as a planted bug)."""
    d = x.shape[3]
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
    return take(rope(take(x, perm, 3), theta), np.argsort(perm), 3)


# ----------------------------------------------------------------------------- models

# `planted` names a known bug to build into the reference, so the test can show that its
# comparison with the executor catches it: "no_scale" (scores not divided by sqrt(d)),
# "gqa_modulo" (query head h reads kv head h % kv_heads), "gelu_erf" (exact GELU for the
# tanh form), "rope_interleaved" (GPT-NeoX / Meta pairs (2i, 2i+1) for rotate_half).

def gpt2_loss(w, ids, targets, heads, planted=None):
    """w: HF GPT-2 names -> Var. ids, targets [B, T]."""
    t = ids.shape[1]
    x = take(w["transformer.wte.weight"], ids, 0) + take(w["transformer.wpe.weight"], np.arange(t), 0)
    layer = 0
    while f"transformer.h.{layer}.ln_1.weight" in w:
        p = lambda name: w[f"transformer.h.{layer}.{name}"]
        h = layer_norm(x, p("ln_1.weight"), p("ln_1.bias"))
        qkv = h @ p("attn.c_attn.weight") + p("attn.c_attn.bias")
        width = qkv.shape[-1] // 3
        q, k, v = (split_heads(take(qkv, np.arange(i * width, (i + 1) * width), 2), heads) for i in range(3))
        x = x + merge_heads(attention(q, k, v, planted)) @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
        h = layer_norm(x, p("ln_2.weight"), p("ln_2.bias"))
        act = gelu_erf if planted == "gelu_erf" else gelu_new
        x = x + act(h @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias")) @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias")
        layer += 1
    x = layer_norm(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"])
    return cross_entropy(x @ transpose(w["transformer.wte.weight"], (1, 0)), targets)


def swiglu_mlp(x, w, prefix):
    """Llama's MLP: down(silu(gate x) * up x), weights "<prefix>gate_proj.weight", ..."""
    linear = lambda v, name: v @ transpose(w[prefix + name], (1, 0))
    return linear(silu(linear(x, "gate_proj.weight")) * linear(x, "up_proj.weight"), "down_proj.weight")


def deepseek_moe(h, w, n, top_k, planted=None):
    """DeepSeekMoE's MoE block (modeling_deepseek.py DeepseekMoE, scoring_func softmax,
    norm_topk_prob false): h [B, T, H]; each token's top_k experts by router probability
    (ties to the lower index), their outputs weighted by those probabilities as they are,
    plus the shared experts' MLP. planted "topk_renormalized": Mixtral's weights instead
    (the top_k probabilities divided by their sum)."""
    b, t, hidden = h.shape
    x = reshape(h, (b * t, hidden))
    probs = softmax(x @ transpose(w[n + "mlp.gate.weight"], (1, 0)))  # [tokens, experts]
    experts = probs.shape[1]
    chosen = np.argsort(-probs.value, axis=1, kind="stable")[:, :top_k]
    flat = reshape(probs, (b * t * experts,))
    norm = None
    if planted == "topk_renormalized":
        picked = take(flat, (np.arange(b * t)[:, None] * experts + chosen).reshape(-1), 0)
        norm = power(reshape(picked, (b * t, top_k)) @ np.ones((top_k, 1)), -1.0)  # [tokens, 1]
    out = None
    for e in range(experts):
        rows = np.nonzero((chosen == e).any(axis=1))[0]
        if len(rows) == 0:
            continue
        weight = reshape(take(flat, rows * experts + e, 0), (len(rows), 1))
        if norm is not None:
            weight = weight * take(norm, rows, 0)
        y = swiglu_mlp(take(x, rows, 0), w, f"{n}mlp.experts.{e}.") * weight
        scatter = np.zeros((b * t, len(rows)))
        scatter[rows, np.arange(len(rows))] = 1.0  # each expert row back to its token
        out = as_var(scatter) @ y if out is None else out + as_var(scatter) @ y
    if n + "mlp.shared_experts.gate_proj.weight" in w:
        out = out + swiglu_mlp(x, w, n + "mlp.shared_experts.")
    return reshape(out, (b, t, hidden))


def mla_attention(h, w, n, heads, planted=None):
    """DeepSeek-V2's latent attention (modeling_deepseek.py DeepseekV2Attention) on h [B, T, H]:
    Q through q_a_proj / q_a_layernorm / q_b_proj (or q_proj), the latent and the one RoPE
    key from kv_a_proj_with_mqa, K_nope and V per head from kv_b_proj; RoPE on the rope
    parts with DeepSeek's interleaved pairs (2i, 2i + 1); scores scaled by 1/sqrt(nope + rope).
    planted "rope_rotate_half": Llama's pairs (i, d/2 + i) instead."""
    linear = lambda x, name: x @ transpose(w[n + "self_attn." + name], (1, 0))
    kv_rank = w[n + "self_attn.kv_a_layernorm.weight"].shape[0]
    rope_dim = w[n + "self_attn.kv_a_proj_with_mqa.weight"].shape[0] - kv_rank
    if n + "self_attn.q_a_proj.weight" in w:
        q = linear(rms_norm(linear(h, "q_a_proj.weight"), w[n + "self_attn.q_a_layernorm.weight"]), "q_b_proj.weight")
    else:
        q = linear(h, "q_proj.weight")
    qk_dim = q.shape[-1] // heads
    nope = qk_dim - rope_dim
    v_dim = w[n + "self_attn.kv_b_proj.weight"].shape[0] // heads - nope
    q = split_heads(q, heads)  # [B, heads, T, nope + rope]
    latent = linear(h, "kv_a_proj_with_mqa.weight")
    c = take(latent, np.arange(kv_rank), 2)
    k_pe = take(latent, np.arange(kv_rank, kv_rank + rope_dim), 2)
    kv = split_heads(linear(rms_norm(c, w[n + "self_attn.kv_a_layernorm.weight"]), "kv_b_proj.weight"), heads)
    rot = rope if planted == "rope_rotate_half" else rope_interleaved
    b, t = h.shape[0], h.shape[1]
    q_pe = rot(take(q, np.arange(nope, qk_dim), 3))
    k_pe = rot(reshape(k_pe, (b, 1, t, rope_dim)))
    q = concat([take(q, np.arange(nope), 3), q_pe], 3)
    k = concat([take(kv, np.arange(nope), 3), take(k_pe, np.zeros(heads, dtype=int), 1)], 3)
    y = attention(q, k, take(kv, np.arange(nope, nope + v_dim), 3), planted)
    return linear(merge_heads(y), "o_proj.weight")


def gqa_attention(h, w, n, heads, kv_heads, planted=None):
    """Llama's attention on h [B, T, H]: RoPE (rotate_half), GQA by repeat_kv."""
    linear = lambda x, name: x @ transpose(w[n + "self_attn." + name], (1, 0))
    rot = rope_interleaved if planted == "rope_interleaved" else rope
    q = rot(split_heads(linear(h, "q_proj.weight"), heads))
    k = rot(split_heads(linear(h, "k_proj.weight"), kv_heads))
    v = split_heads(linear(h, "v_proj.weight"), kv_heads)
    kv_of_head = np.arange(heads) // (heads // kv_heads)  # repeat_kv
    if planted == "gqa_modulo":
        kv_of_head = np.arange(heads) % kv_heads
    y = attention(q, take(k, kv_of_head, 1), take(v, kv_of_head, 1), planted)
    return linear(merge_heads(y), "o_proj.weight")


def llama_loss(w, ids, targets, heads, kv_heads, top_k=None, planted=None):
    """w: HF Llama names -> Var, or DeepSeekMoE's (Llama with experts, top_k per token) or
    DeepSeek-V2's (latent attention, experts). ids, targets [B, T]."""
    x = take(w["model.embed_tokens.weight"], ids, 0)
    layer = 0
    while f"model.layers.{layer}.input_layernorm.weight" in w:
        n = f"model.layers.{layer}."
        h = rms_norm(x, w[n + "input_layernorm.weight"])
        if n + "self_attn.kv_a_proj_with_mqa.weight" in w:
            x = x + mla_attention(h, w, n, heads, planted)
        else:
            x = x + gqa_attention(h, w, n, heads, kv_heads, planted)
        h = rms_norm(x, w[n + "post_attention_layernorm.weight"])
        if n + "mlp.gate.weight" in w:  # a MoE layer
            x = x + deepseek_moe(h, w, n, top_k, planted)
        else:
            x = x + swiglu_mlp(h, w, n + "mlp.")
        layer += 1
    x = rms_norm(x, w["model.norm.weight"])
    return cross_entropy(x @ transpose(w["lm_head.weight"], (1, 0)), targets)


def loss_and_grads(loss_fn, weights, *args):
    """The loss (float) and d loss / d weight for every weight (float64 arrays by name)."""
    w = {name: Var(np.asarray(value, dtype=np.float64)) for name, value in weights.items()}
    loss = loss_fn(w, *args)
    loss.backward()
    return float(loss.value), {name: (v.grad if v.grad is not None else np.zeros_like(v.value)) for name, v in w.items()}


def adamw_first_step(p, g, lr, beta1, beta2, eps, weight_decay):
    """AdamW's first update from zero moments: (next weights, exp_avg, exp_avg_sq)."""
    m = (1 - beta1) * g
    v = (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1), v / (1 - beta2)
    return p - lr * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * p), m, v
