// Reading the reports' TOML files (configs/regression.toml, configs/boards/*.toml) with errors that
// name the file, the line and the key.
#pragma once

#include <string>

#include <toml++/toml.h>

namespace k3verdict {

// Parses `path`; VerdictError "path:line: what" on a syntax error or a missing file.
toml::table parse_toml_file(const std::string& path);

[[noreturn]] void toml_fail(const std::string& path, const toml::node& node, const std::string& key,
                            const std::string& what);

// The value of a node of the expected type, or toml_fail naming `key`.
double toml_number(const std::string& path, const toml::node& node, const std::string& key);
std::string toml_string(const std::string& path, const toml::node& node, const std::string& key);
bool toml_bool(const std::string& path, const toml::node& node, const std::string& key);

}  // namespace k3verdict
