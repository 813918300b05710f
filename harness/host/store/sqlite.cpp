#include "harness/host/store/sqlite.h"

#include <fmt/format.h>

namespace k3store {

Statement::Statement(sqlite3* db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
    throw StoreError(fmt::format("SQL error: {} (in: {})", sqlite3_errmsg(db), sql.substr(0, 80)));
  }
}
Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int i, const std::string& v) {
  sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}
Statement& Statement::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}
Statement& Statement::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw StoreError(fmt::format("SQL error: {}", sqlite3_errmsg(db_)));
}
void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}
void Statement::run() {
  while (step()) {
  }
  reset();
}

int Statement::columns() const {
  return sqlite3_column_count(stmt_);
}
bool Statement::is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
std::string Statement::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? reinterpret_cast<const char*>(p) : "";
}
double Statement::real(int col) const {
  return sqlite3_column_double(stmt_, col);
}
std::int64_t Statement::integer(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
std::optional<double> Statement::optional_real(int col) const {
  return is_null(col) ? std::nullopt : std::optional<double>(real(col));
}
std::optional<std::int64_t> Statement::optional_integer(int col) const {
  return is_null(col) ? std::nullopt : std::optional<std::int64_t>(integer(col));
}
std::optional<int> Statement::optional_int(int col) const {
  return is_null(col) ? std::nullopt : std::optional<int>(static_cast<int>(integer(col)));
}
std::string Statement::column_name(int col) const {
  return sqlite3_column_name(stmt_, col);
}

Connection::Connection(const std::string& path, int flags) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(fmt::format("{}: cannot open: {}", path, msg));
  }
  sqlite3_extended_result_codes(db_, 1);
}
Connection::~Connection() {
  sqlite3_close(db_);
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw StoreError(fmt::format("{}: {}", path_, msg));
  }
}

std::int64_t Connection::scalar_int(const std::string& sql) {
  Statement s(db_, sql);
  if (!s.step()) throw StoreError(fmt::format("{}: no result for: {}", path_, sql));
  return s.integer(0);
}

Transaction::Transaction(Connection& c) : c_(c), nested_(sqlite3_get_autocommit(c.handle()) == 0) {
  c_.exec(nested_ ? "SAVEPOINT k3tx" : "BEGIN IMMEDIATE");
}
Transaction::~Transaction() {
  if (done_) return;
  sqlite3_exec(c_.handle(), nested_ ? "ROLLBACK TO k3tx; RELEASE k3tx" : "ROLLBACK", nullptr,
               nullptr, nullptr);
}
void Transaction::commit() {
  c_.exec(nested_ ? "RELEASE k3tx" : "COMMIT");
  done_ = true;
}

}  // namespace k3store
