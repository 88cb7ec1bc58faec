// SPDX-License-Identifier: MIT
// The user's defaults (docs/config.md): precedence of every level alone and in pairs, `config`
// edits that keep comments, a fresh HOME, bad files reported at FILE:LINE:COL, and no person's
// name or path built into src/ or include/.
#include "test_support.hpp"

#include <primebeaker/config/config.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pwd.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using pb::test::run_primebeaker;
using pb::test::RunOptions;
using pb::test::RunResult;

// A user with a HOME, a project directory and a beaker config of their own.
class ConfigTest : public ::testing::Test {
protected:
  pb::test::TempDir tmp;
  fs::path home = tmp / "home";
  fs::path project = tmp / "project";
  fs::path work = project / "sub";

  void SetUp() override {
    fs::create_directories(work);
    fs::create_directories(home);
  }

  fs::path user_file() const { return home / ".config" / "primebeaker" / "config.toml"; }

  RunResult run(const std::vector<std::string> &args,
                const std::map<std::string, std::string> &env = {}) const {
    RunOptions options;
    options.env = env;
    options.env["HOME"] = home.string();
    options.cwd = work;
    return run_primebeaker(args, options);
  }
};

// ---- precedence ----

enum Level { at_beaker, at_user, at_project, at_env, at_flag };
const char *const k_names[] = {"beaker", "user", "project", "env", "flag"};

// `workspace` set at the given levels; which one wins, and what origin it reports.
TEST_F(ConfigTest, EachLevelAloneAndInPairsFollowsThePrecedence) {
  std::vector<std::vector<Level>> cases;
  for (int a = at_beaker; a <= at_env; ++a) {
    cases.push_back({Level(a)});
    for (int b = a + 1; b <= at_env; ++b) {
      cases.push_back({Level(a), Level(b)});
    }
  }
  for (const auto &levels : cases) {
    fs::remove_all(home / ".beaker");
    fs::remove_all(home / ".config");
    fs::remove(project / "primebeaker.toml");
    std::map<std::string, std::string> environment;
    Level top = at_beaker;
    for (const Level level : levels) {
      top = std::max(top, level);
      const std::string workspace = std::string("ai2/") + k_names[level];
      switch (level) {
      case at_beaker:
        pb::test::write_file(home / ".beaker" / "config.yml",
                             "user_token: secret\ndefault_workspace: " + workspace + "\n");
        break;
      case at_user:
        pb::test::write_file(user_file(), "# mine\nworkspace = \"" + workspace + "\"\n");
        break;
      case at_project:
        pb::test::write_file(project / "primebeaker.toml", "workspace = '" + workspace + "'\n");
        break;
      case at_env:
        environment["PRIMEBEAKER_WORKSPACE"] = workspace;
        break;
      case at_flag:
        break;
      }
    }
    std::string what;
    for (const Level level : levels) {
      what += std::string(k_names[level]) + " ";
    }
    const auto got = run({"config", "get", "workspace", "--show-origin"}, environment);
    ASSERT_EQ(got.exit_code, 0) << what << got.err;
    EXPECT_NE(got.out.find(std::string("\tai2/") + k_names[top] + "\n"), std::string::npos)
        << what << got.out;
    const std::string origin = top == at_beaker ? "beaker:" + (home / ".beaker/config.yml").string()
                               : top == at_user ? "file:" + user_file().string() + ":2"
                               : top == at_project
                                   ? "file:" + (project / "primebeaker.toml").string() + ":1"
                                   : std::string("env:PRIMEBEAKER_WORKSPACE");
    EXPECT_EQ(got.out.substr(0, got.out.find('\t')), origin) << what;
  }
  // Nothing set: the built-in.
  fs::remove_all(home / ".beaker");
  fs::remove_all(home / ".config");
  fs::remove(project / "primebeaker.toml");
  const auto built_in = run({"config", "get", "workspace", "--show-origin"});
  EXPECT_EQ(built_in.out, "built-in\tai2/oe-agents\n");
}

// The flag beats every other level, at a launch; each lower level shows on the card.
TEST_F(ConfigTest, AFlagBeatsEveryLevelAndTheCardSaysWhereDefaultsCameFrom) {
  const std::string mount = tmp.path().string();
  pb::test::write_file(home / ".beaker" / "config.yml", "default_workspace: ai2/beaker\n");
  pb::test::write_file(user_file(),
                       "workspace = \"ai2/user\"\npriority = \"urgent\"\nmount_path = \"" + mount +
                           "\"\nworking_dir = \"" + mount + "\"\nscratch_dir = \"" + mount +
                           "\"\nhome_dir = \"" + mount + "\"\n");
  pb::test::write_file(project / "primebeaker.toml", "clusters = [\"ai2/a\", \"ai2/b\"]\n");
  pb::test::write_file(work / "rl.toml",
                       pb::test::read_file(pb::test::source_dir() / "examples/rl/rl.toml"));
  const std::map<std::string, std::string> environment = {{"PRIMEBEAKER_WORKSPACE", "ai2/env"}};

  const auto card = run({"rl", "preview", "--toml", "rl.toml", "--card"}, environment);
  ASSERT_EQ(card.exit_code, 0) << card.err;
  EXPECT_NE(card.out.find("beaker     ai2/env, priority urgent on ai2/a, ai2/b"), std::string::npos)
      << card.out;
  EXPECT_NE(card.out.find("--priority --scratch-dir --working-dir from " + user_file().string()),
            std::string::npos)
      << card.out;
  EXPECT_NE(card.out.find("--cluster from " + (project / "primebeaker.toml").string()),
            std::string::npos)
      << card.out;
  EXPECT_NE(card.out.find("--workspace from env:PRIMEBEAKER_WORKSPACE"), std::string::npos)
      << card.out;

  const auto flagged = run({"rl",
                            "preview",
                            "--toml",
                            "rl.toml",
                            "--card",
                            "--workspace",
                            "ai2/flag",
                            "--priority",
                            "normal"},
                           environment);
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_NE(flagged.out.find("beaker     ai2/flag, priority normal on ai2/a, ai2/b"),
            std::string::npos)
      << flagged.out;
  EXPECT_EQ(flagged.out.find("--workspace from"), std::string::npos) << flagged.out;

  // -v names each origin too.
  const auto verbose = run({"-v", "rl", "preview", "--toml", "rl.toml"}, environment);
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_NE(verbose.err.find("--workspace from env:PRIMEBEAKER_WORKSPACE"), std::string::npos)
      << verbose.err;
  EXPECT_NE(
      verbose.err.find("--cluster from file:" + (project / "primebeaker.toml").string() + ":1"),
      std::string::npos)
      << verbose.err;
}

// A fresh HOME: no file, no variable; a launch works on the built-ins and -v names them.
TEST_F(ConfigTest, AFreshHomeWorksWithTheBuiltInsNamedInVerbose) {
  const std::string mount = tmp.path().string();
  pb::test::write_file(work / "rl.toml",
                       pb::test::read_file(pb::test::source_dir() / "examples/rl/rl.toml"));
  const auto preview = run({"-v",
                            "rl",
                            "preview",
                            "--toml",
                            "rl.toml",
                            "--mount-path",
                            mount,
                            "--working-dir",
                            mount,
                            "--scratch-dir",
                            mount,
                            "--home-dir",
                            mount});
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  EXPECT_NE(preview.err.find("built-in defaults (no flag, PRIMEBEAKER_* or config file sets "
                             "them): --cluster, --controller-priority, --controller-token-secret, "
                             "--dataset, --hf-secret, --priority, --wandb-secret, --workspace"),
            std::string::npos)
      << preview.err;
  EXPECT_FALSE(fs::exists(home / ".config")); // reading defaults writes nothing
  const auto list = run({"config", "list", "--show-origin"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("built-in\tworkspace=ai2/oe-agents\n"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("env:USER\tuser=jdoe\n"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("derived: mount_path/user\tshared_dir=/weka/jdoe\n"), std::string::npos)
      << list.out;
}

// wandb.project fills a TOML's W&B table that names none, in the launch's copy of the TOML;
// a TOML that names one keeps it.
TEST_F(ConfigTest, TheConfiguredWandbProjectFillsOnlyATomlWithoutOne) {
  const std::string mount = tmp.path().string();
  pb::test::write_file(user_file(),
                       "mount_path = \"" + mount + "\"\nworking_dir = \"" + mount +
                           "\"\nscratch_dir = \"" + mount + "\"\nhome_dir = \"" + mount +
                           "\"\n[wandb]\nproject = \"team-runs\"\n");
  const std::string example = pb::test::read_file(pb::test::source_dir() / "examples/rl/rl.toml");
  const std::string named = "project = \"primebeaker-examples\"\n";
  ASSERT_NE(example.find(named), std::string::npos);
  std::string unnamed = example;
  unnamed.erase(unnamed.find(named), named.size());
  pb::test::write_file(work / "rl.toml", unnamed);
  pb::test::write_file(work / "named.toml", example);

  const auto card = run({"rl", "preview", "--toml", "rl.toml", "--card"});
  ASSERT_EQ(card.exit_code, 0) << card.err;
  EXPECT_NE(card.out.find("overrides  wandb.project = \"team-runs\""), std::string::npos)
      << card.out;
  EXPECT_NE(card.out.find("in team-runs"), std::string::npos) << card.out;
  const auto kept = run({"rl", "preview", "--toml", "named.toml", "--card"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(kept.out.find("overrides"), std::string::npos) << kept.out;
  EXPECT_NE(kept.out.find("in primebeaker-examples"), std::string::npos) << kept.out;
  EXPECT_EQ(pb::test::read_file(work / "rl.toml"), unnamed); // the user's file is never changed
}

// prime_rl pins the Prime-RL release whose cataloged image a launch without --image runs: the
// same v0.8.0 TOML gets the fork's image in ai2/oe-agents and prime-rl:v0.8.0 elsewhere, unless
// the config names the release (docs/config.md).
TEST_F(ConfigTest, PrimeRlPinsTheCatalogedImageInEveryWorkspace) {
  pb::test::write_file(work / "rl.toml",
                       pb::test::read_file(pb::test::source_dir() / "examples/rl/rl.toml"));
  const auto image = [&](const std::string &workspace) {
    const auto result = run({"images", "default", "--toml", "rl.toml", "--workspace", workspace},
                            {{"PRIMEBEAKER_IMAGE_CATALOG", ""}});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.out;
  };
  const std::string fork = image("ai2/oe-agents");
  EXPECT_NE(fork, image("ai2/elsewhere")) << "the catalog no longer differs by workspace";
  EXPECT_EQ(image("ai2/elsewhere"), "ghcr.io/primeintellect-ai/prime-rl:v0.8.0\n");

  const auto set = run({"config", "set", "prime_rl", "v0.8.0"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(image("ai2/oe-agents"), "ghcr.io/primeintellect-ai/prime-rl:v0.8.0\n");
  EXPECT_EQ(image("ai2/elsewhere"), "ghcr.io/primeintellect-ai/prime-rl:v0.8.0\n");

  // A launch takes it too, and says where it came from; --image still wins, without a conflict.
  const std::string mount = tmp.path().string();
  pb::test::write_file(user_file(),
                       pb::test::read_file(user_file()) + "mount_path = \"" + mount +
                           "\"\nworking_dir = \"" + mount + "\"\nscratch_dir = \"" + mount +
                           "\"\nhome_dir = \"" + mount + "\"\n");
  const auto preview =
      run({"-v", "rl", "preview", "--toml", "rl.toml", "--workspace", "ai2/oe-agents"},
          {{"PRIMEBEAKER_IMAGE_CATALOG", ""}});
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  const auto spec = nlohmann::json::parse(preview.out)["spec"];
  EXPECT_EQ(spec["tasks"][0]["image"]["docker"], "ghcr.io/primeintellect-ai/prime-rl:v0.8.0")
      << spec["tasks"][0]["image"];
  EXPECT_NE(preview.err.find("--prime-rl from file:" + user_file().string()), std::string::npos)
      << preview.err;
  const auto given = run({"rl",
                          "preview",
                          "--toml",
                          "rl.toml",
                          "--image",
                          "ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67"},
                         {{"PRIMEBEAKER_IMAGE_CATALOG", ""}});
  EXPECT_NE(given.err.find("v0.9"), std::string::npos) << given.err; // its own Prime-RL decides
  EXPECT_EQ(given.err.find("--prime-rl v0.8.0, but"), std::string::npos) << given.err;

  // An unknown release is refused where it is written.
  const auto bad = run({"config", "set", "prime_rl", "v0.5"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("prime_rl must be a Prime-RL release primebeaker reads"),
            std::string::npos)
      << bad.err;
  const auto keys = run({"config", "keys"});
  EXPECT_NE(keys.out.find("prime_rl "), std::string::npos) << keys.out;
  EXPECT_NE(keys.out.find("PRIMEBEAKER_PRIME_RL"), std::string::npos) << keys.out;
}

// The user name: `user`, else $USER, else $LOGNAME, else the passwd entry of the uid.
TEST_F(ConfigTest, TheUserNameFallsBackToLognameThenPasswd) {
  const auto origin = [&](const std::map<std::string, std::string> &env) {
    RunOptions options;
    options.env = env;
    options.env["HOME"] = home.string();
    if (env.count("USER") == 0) {
      options.unset_env = {"USER"}; // the test support sets one
    }
    options.cwd = work;
    const auto got = run_primebeaker({"config", "get", "user", "--show-origin"}, options);
    EXPECT_EQ(got.exit_code, 0) << got.err;
    return got.out;
  };
  EXPECT_EQ(origin({{"USER", "ann"}, {"LOGNAME", "lee"}}), "env:USER\tann\n");
  EXPECT_EQ(origin({{"LOGNAME", "lee"}}), "env:LOGNAME\tlee\n");
  const struct passwd *entry = ::getpwuid(::geteuid());
  if (entry == nullptr || entry->pw_name == nullptr) {
    GTEST_SKIP() << "this uid has no passwd entry";
  }
  EXPECT_EQ(origin({}), std::string("passwd\t") + entry->pw_name + "\n");
  EXPECT_EQ(origin({{"PRIMEBEAKER_USER", "pat"}, {"LOGNAME", "lee"}}),
            "env:PRIMEBEAKER_USER\tpat\n");
}

// The same chain, pure: Settings::resolve over given sources; no name at all leaves `user` and
// the derived shared_dir unset (the commands that need them then ask in one line).
TEST(ConfigResolve, TheUserNameChainAndNoNameAtAll) {
  pb::config::Sources sources;
  sources.passwd_user = "svc";
  EXPECT_EQ(pb::config::Settings::resolve(sources).user(), "svc");
  EXPECT_EQ(pb::config::Settings::resolve(sources).get("user")->origin, "passwd");
  EXPECT_EQ(pb::config::Settings::resolve(sources).text("shared_dir"), "/weka/svc");
  sources.environment["LOGNAME"] = "lee";
  EXPECT_EQ(pb::config::Settings::resolve(sources).user(), "lee");
  sources.environment["USER"] = "ann";
  EXPECT_EQ(pb::config::Settings::resolve(sources).user(), "ann");
  sources.user_text = "user = \"cfg\"\n";
  sources.files.user = "/home/x/.config/primebeaker/config.toml";
  EXPECT_EQ(pb::config::Settings::resolve(sources).user(), "cfg");
  pb::config::Sources none;
  none.environment["USER"] = "a/b"; // not a name
  const auto nameless = pb::config::Settings::resolve(none);
  EXPECT_EQ(nameless.user(), "");
  EXPECT_EQ(nameless.get("shared_dir"), nullptr);
}

// ---- editing ----

TEST_F(ConfigTest, SetAndUnsetKeepEveryCommentAndLine) {
  const std::string before = "# my defaults\n"
                             "workspace   = \"ai2/old\"   # team space\n"
                             "\n"
                             "[wandb]\n"
                             "# who pays\n"
                             "entity = \"lab\"\n";
  pb::test::write_file(user_file(), before);
  ASSERT_EQ(run({"config", "set", "workspace", "ai2/new"}).exit_code, 0);
  EXPECT_EQ(pb::test::read_file(user_file()),
            "# my defaults\n"
            "workspace   = \"ai2/new\"   # team space\n"
            "\n"
            "[wandb]\n"
            "# who pays\n"
            "entity = \"lab\"\n");
  const auto set = run({"config", "set", "wandb.project", "search"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const auto text = pb::test::read_file(user_file());
  EXPECT_NE(text.find("# who pays\nentity = \"lab\"\nproject = \"search\"\n"), std::string::npos)
      << text;
  ASSERT_EQ(run({"config", "unset", "wandb.project"}).exit_code, 0);
  ASSERT_EQ(run({"config", "set", "workspace", "ai2/old"}).exit_code, 0);
  EXPECT_EQ(pb::test::read_file(user_file()), before);

  // A list key, and the project file beside it.
  ASSERT_EQ(run({"config", "set", "clusters", "ai2/a,ai2/b", "--project"}).exit_code, 0);
  EXPECT_EQ(pb::test::read_file(work / "primebeaker.toml"), "clusters = [\"ai2/a\", \"ai2/b\"]\n");
  const auto listed = run({"config", "list", "--project"});
  EXPECT_EQ(listed.out, "clusters=ai2/a,ai2/b\n");
}

// Bad keys and values: one line naming what and where, nothing written.
TEST_F(ConfigTest, BadKeysAndValuesAreOneLineAndChangeNothing) {
  pb::test::write_file(user_file(), "workspace = \"ai2/x\"\n");
  const auto typo = run({"config", "set", "workspce", "ai2/y"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.err,
            "primebeaker: error: unknown config key 'workspce' (did you mean "
            "'workspace'?)\n");
  const auto priority = run({"config", "set", "priority", "hgh"});
  EXPECT_EQ(priority.exit_code, 2);
  EXPECT_NE(priority.err.find("did you mean 'high'?"), std::string::npos) << priority.err;
  const auto relative = run({"config", "set", "scratch_dir", "weka/me"});
  EXPECT_EQ(relative.exit_code, 2);
  EXPECT_EQ(pb::test::read_file(user_file()), "workspace = \"ai2/x\"\n");

  // A broken file is named at its line and column by every command that reads defaults.
  pb::test::write_file(project / "primebeaker.toml", "\nworkspac = \"ai2/z\"\n");
  const auto broken = run({"rl", "preview", "--toml", "missing.toml"});
  EXPECT_EQ(broken.exit_code, 3);
  EXPECT_EQ(broken.err,
            "primebeaker: error: " + (project / "primebeaker.toml").string() +
                ":2:12: unknown config key 'workspac' (did you mean 'workspace'?)\n");
  pb::test::write_file(project / "primebeaker.toml", "clusters = \"ai2/a\"\n");
  const auto type = run({"config", "list"});
  EXPECT_EQ(type.exit_code, 3);
  EXPECT_NE(type.err.find("primebeaker.toml:1:12: clusters must be an array of strings"),
            std::string::npos)
      << type.err;
  const auto bad_env = run({"config", "list"}, {{"PRIMEBEAKER_PRIORITY", "hgh"}});
  EXPECT_EQ(bad_env.exit_code, 3);
}

// ---- derived defaults ----

// Watcher and evaluation defaults come from the user's shared dir, <mount_path>/<user>: with
// neither $USER nor $LOGNAME the name is the passwd entry's, and a configured mount moves it.
TEST_F(ConfigTest, TheWatcherFindsItsRootsUnderTheConfiguredMount) {
  pb::test::write_file(user_file(), "mount_path = \"/mnt/team\"\n");
  RunOptions options;
  options.env["HOME"] = home.string();
  options.env["USER"] = "ann";
  options.cwd = work;
  const auto show = run_primebeaker(
      {"watcher", "show", "some/model", "--database", (tmp / "w.sqlite3").string()}, options);
  EXPECT_NE(show.err.find("/mnt/team/ann/jtc/some/model"), std::string::npos) << show.err;
  options.unset_env = {"USER", "LOGNAME"};
  options.env.erase("USER");
  const struct passwd *entry = ::getpwuid(::geteuid());
  if (entry == nullptr || entry->pw_name == nullptr) {
    GTEST_SKIP() << "this uid has no passwd entry";
  }
  const auto nameless = run_primebeaker(
      {"watcher", "show", "some/model", "--database", (tmp / "w.sqlite3").string()}, options);
  EXPECT_NE(nameless.err.find("/mnt/team/" + std::string(entry->pw_name) + "/jtc/some/model"),
            std::string::npos)
      << nameless.err;
}

// ---- no person built in ----

// No string in src/ or include/ names a person, a person's home on the mount, or a person's
// secret (Python PrimeBeaker built in one researcher's: docs/config.md).
TEST(NoPersonBuiltIn, SourcesNameNoPersonPathOrSecret) {
  const std::regex person(R"(gfaria|/weka/(?!oe-|\.\.\.)[a-z]+[a-z0-9_]*/|[a-z]+_WANDB_API_KEY)",
                          std::regex::icase);
  std::vector<std::string> found;
  for (const char *root : {"src", "include"}) {
    for (const auto &entry : fs::recursive_directory_iterator(pb::test::source_dir() / root)) {
      if (!entry.is_regular_file()) {
        continue;
      }
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch match;
        if (std::regex_search(line, match, person)) {
          found.push_back(fs::relative(entry.path(), pb::test::source_dir()).string() + ":" +
                          std::to_string(number) + ": " + match.str());
        }
      }
    }
  }
  std::ostringstream all;
  for (const auto &hit : found) {
    all << hit << '\n';
  }
  EXPECT_TRUE(found.empty()) << all.str();
  // The pattern itself finds what it is meant to.
  EXPECT_TRUE(std::regex_search(std::string("\"/weka/gfaria/jtc\""), person));
  EXPECT_TRUE(std::regex_search(std::string("secret = \"jdoe_WANDB_API_KEY\""), person));
  EXPECT_FALSE(std::regex_search(std::string("\"WANDB_API_KEY\""), person));
}

} // namespace
