// configs/farm*.toml: [farm] settings, [defaults] for every board, [boards.NAME] per board.
#include "harness/host/farm/inventory.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

namespace k3farm {
namespace fs = std::filesystem;

bool BoardConfig::has_tag(const std::string& tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

const BoardConfig* FarmConfig::find(const std::string& board) const {
  for (const auto& b : boards)
    if (b.name == board) return &b;
  return nullptr;
}

std::vector<std::string> FarmConfig::names() const {
  std::vector<std::string> out;
  for (const auto& b : boards) out.push_back(b.name);
  return out;
}

std::vector<std::string> select_boards(const FarmConfig& farm,
                                       const std::vector<std::string>& names,
                                       const std::vector<std::string>& tags) {
  for (const auto& b : names)
    if (farm.find(b) == nullptr)
      throw std::invalid_argument(fmt::format("--board: unknown board '{}' (farm {}: {})", b,
                                              farm.source, fmt::join(farm.names(), ", ")));
  std::vector<std::string> out;
  for (const auto& b : farm.boards) {
    const bool named =
        names.empty() || std::find(names.begin(), names.end(), b.name) != names.end();
    bool tagged = true;
    for (const auto& t : tags) tagged = tagged && b.has_tag(t);
    if (named && tagged) out.push_back(b.name);
  }
  if (out.empty())
    throw std::invalid_argument(
        fmt::format("--board/--tag: no board of farm {} ({}) matches", farm.name, farm.source));
  return out;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::set<int> cpus;
  std::size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const auto comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    static const std::regex range(R"((\d{1,4})(?:-(\d{1,4}))?)");
    std::smatch m;
    if (!std::regex_match(item, m, range))
      throw std::invalid_argument(fmt::format("'{}' is not a CPU number or range like 8-15", item));
    const int lo = std::stoi(m[1]);
    const int hi = m[2].matched ? std::stoi(m[2]) : lo;
    if (hi < lo) throw std::invalid_argument(fmt::format("range '{}' runs backwards", item));
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return {cpus.begin(), cpus.end()};
}

namespace {

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {
    base_dir_ = fs::absolute(fs::path(path_)).parent_path().string();
  }

  FarmConfig parse() {
    toml::table doc;
    if (!fs::is_regular_file(path_))
      throw std::runtime_error(fmt::format("{}: no such farm file", path_));
    try {
      doc = toml::parse_file(path_);
    } catch (const toml::parse_error& e) {
      throw std::runtime_error(
          fmt::format("{}:{}: {}", path_, e.source().begin.line, e.description()));
    }
    FarmConfig farm;
    farm.source = path_;
    BoardConfig defaults;
    for (const auto& [k, v] : doc) {
      const std::string key(k.str());
      if (key == "farm") {
        parse_farm(table(v, key), farm);
      } else if (key == "defaults") {
        parse_board_keys(table(v, key), "defaults", defaults, farm);
      } else if (key != "boards") {
        fail(v, key, "unknown table (known: farm, defaults, boards)");
      }
    }
    const toml::node* boards_node = doc.get("boards");
    if (boards_node == nullptr)
      throw std::runtime_error(fmt::format("{}: no [boards.NAME] tables", path_));
    const toml::table& boards = table(*boards_node, "boards");
    // toml++ tables are ordered by key; keep the file's order (line numbers) for predictable
    // output.
    std::vector<std::pair<std::string, const toml::node*>> ordered;
    for (const auto& [k, v] : boards) ordered.emplace_back(std::string(k.str()), &v);
    std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
      return a.second->source().begin.line < b.second->source().begin.line;
    });
    for (const auto& [name, node] : ordered) {
      const std::string key = "boards." + name;
      if (!std::regex_match(name, std::regex(R"([A-Za-z0-9][A-Za-z0-9_.-]{0,63})")))
        fail(*node, key, "board names use letters, digits, '_', '.', '-' (at most 64)");
      BoardConfig b = defaults;
      b.name = name;
      b.defined_in = fmt::format("{}:{}", path_, node->source().begin.line);
      parse_board_keys(table(*node, key), key, b, farm);
      finish_board(*node, key, b, farm);
      farm.boards.push_back(std::move(b));
    }
    if (farm.boards.empty())
      throw std::runtime_error(fmt::format("{}: no [boards.NAME] tables", path_));
    return farm;
  }

 private:
  [[noreturn]] void fail(const toml::node& node, const std::string& key,
                         const std::string& what) const {
    throw std::runtime_error(
        fmt::format("{}:{}: {}: {}", path_, node.source().begin.line, key, what));
  }

  const toml::table& table(const toml::node& node, const std::string& key) const {
    const toml::table* t = node.as_table();
    if (t == nullptr) fail(node, key, "expected a table");
    return *t;
  }

  std::string string(const toml::node& v, const std::string& key) const {
    if (!v.is_string()) fail(v, key, "expected a string");
    return *v.value<std::string>();
  }

  double positive(const toml::node& v, const std::string& key) const {
    const auto d = v.value<double>();
    if (!d || *d <= 0) fail(v, key, "expected a positive number");
    return *d;
  }

  std::vector<std::string> words(const toml::node& v, const std::string& key) const {
    std::vector<std::string> out;
    if (const toml::array* a = v.as_array()) {
      for (const auto& item : *a) out.push_back(string(item, key));
      return out;
    }
    fail(v, key, "expected an array of strings (one element per word)");
  }

  // ~/ is the user's home; a relative path is relative to the farm file.
  std::string local_path(const std::string& p) const {
    if (p.empty()) return p;
    if (p.rfind("~/", 0) == 0) {
      const char* home = std::getenv("HOME");
      return std::string(home ? home : "") + p.substr(1);
    }
    if (p.front() == '/') return p;
    return (fs::path(base_dir_) / p).lexically_normal().string();
  }

  void parse_farm(const toml::table& t, FarmConfig& farm) {
    for (const auto& [k, v] : t) {
      const std::string key = "farm." + std::string(k.str());
      if (k == "name")
        farm.name = string(v, key);
      else if (k == "ssh")
        farm.ssh = string(v, key);
      else if (k == "scp")
        farm.scp = string(v, key);
      else if (k == "ssh_config")
        farm.ssh_config = local_path(string(v, key));
      else if (k == "control_dir")
        farm.control_dir = local_path(string(v, key));
      else if (k == "known_hosts")
        farm_known_hosts_ = local_path(string(v, key));
      else if (k == "connect_timeout_s")
        farm.connect_timeout_s = positive(v, key);
      else if (k == "control_persist_s")
        farm.control_persist_s = positive(v, key);
      else if (k == "lease_wait_s")
        farm.lease_wait_s = positive(v, key);
      else if (k == "max_temp_c")
        farm.max_temp_c = positive(v, key);
      else if (k == "lock_command")
        farm.lock_command = words(v, key);
      else if (k == "max_timeouts") {
        const auto n = v.value<int64_t>();
        if (!v.is_integer() || !n || *n < 1 || *n > 100)
          fail(v, key, "expected an integer in [1, 100]");
        farm.max_timeouts = static_cast<int>(*n);
      } else if (!parse_scheduler_key(k.str(), v, key, farm.scheduler)) {
        fail(v, key,
             "unknown key (known: name, ssh, scp, ssh_config, control_dir, known_hosts, "
             "connect_timeout_s, control_persist_s, lease_wait_s, max_temp_c, lock_command, "
             "max_timeouts, scheduler, partition, gres, constraint, reservation, account, qos, "
             "slurm_timeout_s)");
      }
    }
    if (const std::string key = farm.scheduler.missing_key(); !key.empty())
      fail(t, "farm." + key,
           fmt::format("required with scheduler = \"{}\"", to_string(farm.scheduler.kind)));
    if (farm.ssh.empty()) fail(t, "farm.ssh", "must not be empty");
    if (farm.scp.empty()) fail(t, "farm.scp", "must not be empty");
  }

  // The scheduler's keys (scheduler_config.h); false when `name` is not one of them.
  bool parse_scheduler_key(std::string_view name, const toml::node& v, const std::string& key,
                           SchedulerConfig& s) const {
    static const std::map<std::string_view, std::string SchedulerConfig::*> kSlurmKeys = {
        {"partition", &SchedulerConfig::partition},
        {"gres", &SchedulerConfig::gres},
        {"constraint", &SchedulerConfig::constraint},
        {"reservation", &SchedulerConfig::reservation},
        {"account", &SchedulerConfig::account},
        {"qos", &SchedulerConfig::qos}};
    if (name == "slurm_timeout_s") {
      s.timeout_s = positive(v, key);
    } else if (name == "scheduler") {
      const auto kind = scheduler_kind(string(v, key));
      if (!kind) fail(v, key, "must be builtin or slurm");
      s.kind = *kind;
    } else if (const auto it = kSlurmKeys.find(name); it != kSlurmKeys.end()) {
      // Handed to Slurm's clients as one argument each: no spaces, no leading '-'.
      s.*(it->second) = string(v, key);
      if (!std::regex_match(s.*(it->second), std::regex(R"([A-Za-z0-9_.:,|&*\[\]()-]+)")) ||
          (s.*(it->second))[0] == '-')
        fail(v, key,
             "expected a Slurm name (letters, digits, '_.:,|&*[]()-'; not starting with '-')");
    } else {
      return false;
    }
    s.defined_in[key] = fmt::format("{}:{}", path_, v.source().begin.line);
    return true;
  }

  void parse_board_keys(const toml::table& t, const std::string& prefix, BoardConfig& b,
                        const FarmConfig&) {
    for (const auto& [k, v] : t) {
      const std::string key = prefix + "." + std::string(k.str());
      if (k == "kind") {
        const auto kind = k3targets::target_kind(string(v, key));
        if (!kind || *kind == k3targets::TargetKind::kQemu) fail(v, key, "must be ssh or local");
        b.kind = *kind;
      } else if (k == "host") {
        b.host = string(v, key);
        if (!std::regex_match(b.host, std::regex(R"([A-Za-z0-9_.:%][A-Za-z0-9_.:%-]*)")))
          fail(v, key,
               "expected a host name or address (letters, digits, '.', ':', '-'; not starting with "
               "'-')");
      } else if (k == "port") {
        const auto p = v.value<int64_t>();
        if (!v.is_integer() || !p || *p < 1 || *p > 65535)
          fail(v, key, "expected a port in [1, 65535]");
        b.port = static_cast<int>(*p);
      } else if (k == "user") {
        b.user = string(v, key);
        if (!std::regex_match(b.user, std::regex(R"([A-Za-z0-9_][A-Za-z0-9_.-]*)")))
          fail(v, key,
               "expected a login name (letters, digits, '_', '.', '-'; not starting with '-')");
      } else if (k == "identity") {
        b.identity = local_path(string(v, key));
      } else if (k == "known_hosts") {
        b.known_hosts = local_path(string(v, key));
      } else if (k == "exec_prefix") {
        b.exec_prefix = words(v, key);
      } else if (k == "work_dir") {
        b.work_dir = string(v, key);
        // The work directory is the one remote path scp sees: keep it to characters that no
        // shell, glob or scp path syntax treats specially.
        if (!std::regex_match(b.work_dir, std::regex(R"(/[A-Za-z0-9_./+-]*)")) ||
            b.work_dir.find("..") != std::string::npos)
          fail(v, key,
               "expected an absolute path of letters, digits, '_', '.', '/', '+', '-' (no '..')");
      } else if (k == "cpus") {
        b.cpus_text = string(v, key);
        try {
          b.cpus = parse_cpu_list(b.cpus_text);
        } catch (const std::invalid_argument& e) {
          fail(v, key, e.what());
        }
      } else if (k == "tags") {
        b.tags = words(v, key);
      } else if (k == "variant") {
        b.variant = string(v, key);
      } else if (k == "runner") {
        b.runner = local_path(string(v, key));
      } else if (k == "timeout_s") {
        b.timeout_s = positive(v, key);
      } else if (k == "quarantine_until") {
        b.quarantine_until = string(v, key);
        if (b.quarantine_until != "release" && b.quarantine_until != "healthy")
          fail(v, key,
               "must be \"release\" (k3tune farm release --board) or \"healthy\" (a later "
               "probe)");
      } else if (k == "pdu") {
        parse_pdu(table(v, key), key, b);
      } else if (k == "power_attempts_per_day") {
        const auto n = v.value<int64_t>();
        if (!v.is_integer() || !n || *n < 0 || *n > 24)
          fail(v, key, "expected an integer in [0, 24]");
        b.power_attempts_per_day = static_cast<int>(*n);
      } else if (k == "recover_tcm_locks") {
        if (!v.is_boolean()) fail(v, key, "expected true or false");
        b.recover_tcm_locks = *v.value<bool>();
      } else if (k == "test_hooks") {
        if (!v.is_boolean()) fail(v, key, "expected true or false");
        b.test_hooks = *v.value<bool>();
      } else if (k == "env") {
        for (const auto& [ek, ev] : table(v, key)) {
          const std::string name(ek.str());
          const std::string ekey = key + "." + name;
          if (!std::regex_match(name, std::regex(R"((K3BENCH|K3)_[A-Za-z0-9_]+)")))
            fail(ev, ekey, "only K3BENCH_* and K3_* settings are passed to the runner");
          b.env[name] = string(ev, ekey);
        }
      } else {
        fail(v, key,
             "unknown key (known: kind, host, port, user, identity, known_hosts, exec_prefix, "
             "work_dir, cpus, tags, variant, runner, timeout_s, env, quarantine_until, pdu, "
             "power_attempts_per_day, recover_tcm_locks, test_hooks)");
      }
    }
  }

  // pdu = { daemon = "http://127.0.0.1:16421", name = "lab", outlet = 3, delay_s = 5,
  // ssh_wait_s = 120 }: a board's keys override those [defaults] gives (e.g. daemon and name).
  void parse_pdu(const toml::table& t, const std::string& prefix, BoardConfig& b) const {
    PduOutlet p = b.pdu.value_or(PduOutlet{});
    p.defined_in = fmt::format("{}:{}", path_, t.source().begin.line);
    for (const auto& [k, v] : t) {
      const std::string key = prefix + "." + std::string(k.str());
      if (k == "daemon") {
        p.daemon = string(v, key);
        if (!std::regex_match(p.daemon, std::regex(R"(https?://[A-Za-z0-9_.-]+(:[0-9]{1,5})?/?)")))
          fail(v, key, "expected pdudaemon's listener as http://host:port");
        if (p.daemon.back() == '/') p.daemon.pop_back();
      } else if (k == "name") {
        p.name = string(v, key);
        if (!std::regex_match(p.name, std::regex(R"([A-Za-z0-9_.:-]{1,64})")))
          fail(v, key,
               "expected the PDU's name in pdudaemon's configuration (letters, digits, '_.:-')");
      } else if (k == "outlet") {
        const auto n = v.value<int64_t>();
        if (!v.is_integer() || !n || *n < 0 || *n > 9999)
          fail(v, key, "expected an integer in [0, 9999]");
        p.outlet = static_cast<int>(*n);
      } else if (k == "delay_s") {
        const auto d = v.value<double>();
        if (!d || *d < 0 || *d > 600) fail(v, key, "expected seconds in [0, 600]");
        p.delay_s = *d;
      } else if (k == "ssh_wait_s") {
        p.ssh_wait_s = positive(v, key);
      } else {
        fail(v, key, "unknown key (known: daemon, name, outlet, delay_s, ssh_wait_s)");
      }
    }
    b.pdu = p;
  }

  void finish_board(const toml::node& node, const std::string& key, BoardConfig& b,
                    const FarmConfig&) {
    if (b.pdu) {
      // Reported at the board's own line: [defaults] may have given part of the table.
      if (b.pdu->daemon.empty())
        fail(node, key + ".pdu.daemon", "missing (http://host:port of pdudaemon)");
      if (b.pdu->name.empty())
        fail(node, key + ".pdu.name", "missing (the PDU's name in pdudaemon)");
      if (b.pdu->outlet < 0)
        fail(node, key + ".pdu.outlet", "missing (the board's port on the PDU)");
    }
    if (b.work_dir.empty())
      fail(node, key + ".work_dir", "missing (an absolute path on the board)");
    if (b.kind == k3targets::TargetKind::kSsh) {
      if (b.host.empty()) fail(node, key + ".host", "missing (ssh boards need a host)");
      if (b.known_hosts.empty()) b.known_hosts = farm_known_hosts_;
      if (b.known_hosts.empty())
        fail(node, key + ".known_hosts",
             "missing: host keys are always checked (set farm.known_hosts or the board's)");
      if (b.identity.empty()) fail(node, key + ".identity", "missing (the private key file)");
    }
  }

  std::string path_;
  std::string base_dir_;
  std::string farm_known_hosts_;
};

}  // namespace

FarmConfig load_farm(const std::string& path) {
  return Parser(path).parse();
}

FarmConfig builtin_local_farm(const std::string& root) {
  FarmConfig farm;
  farm.name = "local";
  farm.source = "built-in";
  auto board = [&](std::string name, std::string variant, std::vector<std::string> prefix,
                   std::vector<std::string> tags, double timeout_s) {
    BoardConfig b;
    b.name = std::move(name);
    b.kind = k3targets::TargetKind::kLocal;
    b.variant = std::move(variant);
    b.exec_prefix = std::move(prefix);
    b.tags = std::move(tags);
    b.timeout_s = timeout_s;
    b.work_dir = root + "/build/farm/" + b.name;
    b.defined_in = "built-in local farm";
    farm.boards.push_back(std::move(b));
  };
  board("host", "host", {}, {"host"}, 300);
  for (int vlen : {256, 1024}) {
    board(fmt::format("qemu-vlen{}", vlen), "rvv",
          {"qemu-riscv64", "-cpu", fmt::format("rv64,v=true,vlen={},elen=64,vext_spec=v1.0", vlen)},
          {"qemu", "rvv", fmt::format("vlen{}", vlen)}, 900);
  }
  return farm;
}

}  // namespace k3farm
