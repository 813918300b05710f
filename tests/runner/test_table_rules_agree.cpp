// One table contract: every parameter a tuning table may set is published by `k3bench --list-ops
// --json` with exactly the type, range, multiple and words of the table rules (k3k/table_rules.h)
// that the loader applies, and every microkernel choice k3bench offers is a name the rules accept
// for its layer. The tuner checks its spaces against that catalog, so spaces, runner and loader
// cannot drift apart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"
#include "k3k/table_rules.h"

namespace {

using nlohmann::json;

const json* find_param(const json& ops, std::string_view op, std::string_view name) {
  for (const auto& o : ops)
    if (o["name"] == op)
      for (const auto& p : o["params"])
        if (p["name"] == name) return &p;
  return nullptr;
}

TEST(TableRulesAgree, ListOpsPublishesEveryTunableParameterExactlyAsTheRulesDeclareIt) {
  const auto r = k3test::run_k3bench("--list-ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json ops = json::parse(r.out);
  int checked = 0;
  for (const auto& op : k3k::rules::tunable_ops()) {
    for (const auto& rule : op.params) {
      const json* p = find_param(ops, op.op, rule.name);
      ASSERT_NE(p, nullptr) << op.op << " " << rule.name << " is tunable but not in --list-ops";
      const std::string where = std::string(op.op) + " " + std::string(rule.name);
      if (rule.microkernel) {
        ASSERT_EQ((*p)["type"], "enum") << where;
        for (const auto& choice : (*p)["choices"]) {
          const std::string name = choice.get<std::string>();
          const std::string layer = name == "auto" ? "generic" : name.substr(name.rfind('-') + 1);
          EXPECT_EQ(k3k::rules::microkernel_name_problem(op.op, layer, name), "")
              << where << ": " << name;
        }
      } else if (!rule.words.empty()) {
        ASSERT_EQ((*p)["type"], "enum") << where;
        EXPECT_EQ((*p)["choices"],
                  json(std::vector<std::string>(rule.words.begin(), rule.words.end())))
            << where;
      } else {
        ASSERT_EQ((*p)["type"], "int") << where;
        EXPECT_EQ((*p)["range"], json({rule.zero_is_automatic ? 0 : rule.min, rule.max})) << where;
        EXPECT_EQ(p->value("multiple_of", std::int64_t{1}), rule.multiple_of) << where;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
  // And k3bench refuses what the rules refuse: a slab that is not whole 16-row quanta.
  const auto bad =
      k3test::run_k3bench("--op linear_decode --shape n=96,k=256 --params slab_rows=40 --reps 1");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.err.find("slab_rows=40 is not a multiple of 16"), std::string::npos) << bad.err;
}

}  // namespace
