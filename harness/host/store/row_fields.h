// A row's columns read into a record's fields by each field's type, in the order of the record's
// column list: a reader names its fields once instead of spelling out a typed call per column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/host/store/sqlite.h"

namespace k3store {

// One column read as `out`'s type: text ("" for NULL), a whole number, a real, a flag (non-zero)
// or an optional one (NULL reads as nullopt).
inline void read_field(const Statement& s, int col, std::string& out) {
  out = s.text(col);
}
inline void read_field(const Statement& s, int col, double& out) {
  out = s.real(col);
}
inline void read_field(const Statement& s, int col, std::int64_t& out) {
  out = s.integer(col);
}
inline void read_field(const Statement& s, int col, std::uint64_t& out) {
  out = static_cast<std::uint64_t>(s.integer(col));
}
inline void read_field(const Statement& s, int col, int& out) {
  out = static_cast<int>(s.integer(col));
}
inline void read_field(const Statement& s, int col, bool& out) {
  out = s.integer(col) != 0;
}
inline void read_field(const Statement& s, int col, std::optional<double>& out) {
  out = s.optional_real(col);
}
inline void read_field(const Statement& s, int col, std::optional<std::int64_t>& out) {
  out = s.optional_integer(col);
}
inline void read_field(const Statement& s, int col, std::optional<int>& out) {
  out = s.optional_int(col);
}

// Columns first, first + 1, ... read into `fields`, in order.
template <class... Fields>
void read_fields(const Statement& s, int first, Fields&... fields) {
  int col = first;
  (read_field(s, col++, fields), ...);
}

// Readers of a one-column row (select_rows, select_first_row).
inline std::string text_column(const Statement& s) {
  return s.text(0);
}
inline double real_column(const Statement& s) {
  return s.real(0);
}

}  // namespace k3store
