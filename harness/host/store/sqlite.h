// A thin RAII layer over the SQLite C API: a connection, prepared statements with typed binds,
// and a transaction guard that rolls back unless committed. Errors throw StoreError with one line.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace k3store {

struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Text bound as NULL when empty (columns where empty text means "none": a reason, a path, an
// optional id).
struct NullIfEmpty {
  const std::string& text;
};

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement(Statement&& other) noexcept
      : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, const std::string& v);
  Statement& bind(int index, double v);
  Statement& bind(int index, std::int64_t v);
  Statement& bind(int index, int v) { return bind(index, static_cast<std::int64_t>(v)); }
  Statement& bind_null(int index);
  Statement& bind(int index, const std::optional<double>& v) {
    return v ? bind(index, *v) : bind_null(index);
  }
  Statement& bind(int index, const std::optional<std::int64_t>& v) {
    return v ? bind(index, *v) : bind_null(index);
  }
  Statement& bind(int index, const std::optional<int>& v) {
    return v ? bind(index, *v) : bind_null(index);
  }
  Statement& bind_or_null(int index, const std::string& v) {
    return v.empty() ? bind_null(index) : bind(index, v);
  }
  Statement& bind(int index, NullIfEmpty v) { return bind_or_null(index, v.text); }
  // Binds ?1, ?2, ... to `values`, in order.
  template <class... Values>
  Statement& bind_all(const Values&... values) {
    int index = 0;
    (bind(++index, values), ...);
    return *this;
  }
  // Steps once: true while a row is available.
  bool step();
  void reset();
  // Runs to completion (for INSERT/UPDATE), then resets so the statement can be reused.
  void run();

  int columns() const;
  bool is_null(int col) const;
  std::string text(int col) const;
  double real(int col) const;
  std::int64_t integer(int col) const;
  // NULL reads as nullopt (text() already reads NULL as "").
  std::optional<double> optional_real(int col) const;
  std::optional<std::int64_t> optional_integer(int col) const;
  std::optional<int> optional_int(int col) const;
  std::string column_name(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class Connection {
 public:
  Connection(const std::string& path, int flags);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  void exec(const std::string& sql);
  // The primary result code of the last call that failed (SQLITE_BUSY, ...).
  int last_error() const { return sqlite3_errcode(db_) & 0xff; }
  Statement prepare(const std::string& sql) { return Statement(db_, sql); }
  // `sql` prepared with ?1, ?2, ... bound to `values`, in order.
  template <class... Values>
  Statement query(const std::string& sql, const Values&... values) {
    Statement s = prepare(sql);
    s.bind_all(values...);
    return s;
  }
  // Runs `sql` (an INSERT, UPDATE or DELETE) with ?1, ?2, ... bound to `values`, in order.
  template <class... Values>
  void run(const std::string& sql, const Values&... values) {
    prepare(sql).bind_all(values...).run();
  }
  std::int64_t scalar_int(const std::string& sql);
  std::int64_t changes() const { return sqlite3_changes64(db_); }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// Every row `s` still has, each read by `read`.
template <class Read>
auto read_rows(Statement& s, Read read) {
  std::vector<std::invoke_result_t<Read&, const Statement&>> out;
  while (s.step()) out.push_back(read(s));
  return out;
}

// The rows `sql` selects with ?1, ?2, ... bound to `values`, each read by `read`.
template <class Read, class... Values>
auto select_rows(Connection& c, Read read, const std::string& sql, const Values&... values) {
  Statement s = c.query(sql, values...);
  return read_rows(s, read);
}

// The first row `sql` selects with ?1, ?2, ... bound to `values`, read by `read` (nullopt: none).
template <class Read, class... Values>
auto select_first_row(Connection& c, Read read, const std::string& sql, const Values&... values)
    -> std::optional<std::invoke_result_t<Read&, const Statement&>> {
  Statement s = c.query(sql, values...);
  if (!s.step()) return std::nullopt;
  return read(s);
}

// BEGIN IMMEDIATE on construction (takes the write lock up front, so busy_timeout applies),
// ROLLBACK in the destructor unless commit() was called. Inside a transaction already open on the
// connection (a database writer's batch, database_writer.h) it is a SAVEPOINT instead: commit()
// releases it into the outer transaction, and the destructor undoes only its own writes.
class Transaction {
 public:
  explicit Transaction(Connection& c);
  ~Transaction();
  void commit();

 private:
  Connection& c_;
  bool nested_ = false;
  bool done_ = false;
};

}  // namespace k3store
