#pragma once
// Files written whole or not at all: the content goes to a temporary file beside the
// target, every write and the close are checked, and only then is it renamed over the
// target (rename(2) is atomic within a file system). A reader sees the old file or the new
// one; a full disk or a cut-off run leaves no half file, and the error names the path.
// A rename only ever replaces a regular file (or makes a new path): a character device
// (/dev/null) or a FIFO at the path is written in place (a FIFO with no reader is
// refused rather than waited for), and a folder or other special file is refused.
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace twinsim::io {

// `write` fills the stream; any failure throws std::runtime_error naming `path`, removes
// the temporary file and leaves `path` as it was.
void write_file_whole(const std::string& path, const std::function<void(std::ostream&)>& write);

void write_file_whole(const std::string& path, std::string_view text);

// Checks up front that write_file_whole(path, ...) can write there (the folder exists and
// may be written; a device or FIFO may be written; nothing else is in the way), so a
// command refuses an output it cannot write before its work, not after; throws the same
// std::runtime_error. Leaves nothing behind.
void check_writable(const std::string& path);

}  // namespace twinsim::io
