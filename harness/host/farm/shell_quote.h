// POSIX shell quoting for the one place a remote shell sees our words: ssh concatenates its
// arguments into a command line that the board's login shell parses. Every word is wrapped in
// single quotes (a quote inside becomes '\''), so no character -- ;, $( ), backticks, newlines,
// a leading '-' -- has any meaning to that shell; the word arrives as one argv element.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3farm {

// 'word' with each ' written as '\'' ("" becomes '').
std::string shell_quote(std::string_view word);

// The words quoted and joined by spaces: a command line that a POSIX shell parses back into
// exactly `argv`.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace k3farm
