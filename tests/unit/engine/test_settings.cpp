// Issue 23: the library takes options (kcv::Settings), not environment variables; the front ends
// map the environment onto them (settings_from_environment, tools/kcv/environment.cpp).
#include <stdlib.h>

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "environment.hpp"
#include "kcv/corpus.hpp"
#include "kcv/engine.hpp"
#include "kcv/sandbox.hpp"
#include "kcv/settings.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

/// Every variable settings_from_environment reads.
const char* const kVariables[] = {"KCV_WORKER",        "KCV_INCLUDE_DIR",       "KCV_ADAPTERS_DIR",
                                  "KCV_PYTHON",        "KCV_CUDA_ARCH",         "KCV_TORCH_PCH",
                                  "KCV_CORPUS_VERIFIER", "KCV_THREADS",         "KCV_MAX_ELEMENTS",
                                  "KCV_REFERENCE_CACHE_BYTES", "KCV_REFERENCE_CACHE_ENTRY_BYTES",
                                  "KCV_REFERENCE_CACHE_DIR_BYTES",
                                  "KCV_SANDBOX_OFF",   "KCV_STANDBY",           "KCV_POOL",
                                  "KCV_POOL_START",    "KCV_SANITIZER_PORT_RANGES"};

/// Sets the given variables for the scope, every other one of kVariables unset; restores them all.
class Environment {
 public:
  explicit Environment(const std::map<std::string, std::string>& set) {
    for (const char* name : kVariables) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
    for (const auto& [name, value] : set) setenv(name.c_str(), value.c_str(), 1);
  }
  ~Environment() {
    for (const char* name : kVariables) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

 private:
  std::map<std::string, std::string> saved_;
};

/// The SetupError settings_from_environment throws under `set`, or "" when it throws none.
std::string mapping_error(const std::map<std::string, std::string>& set) {
  const Environment env(set);
  try {
    cli::settings_from_environment();
  } catch (const SetupError& e) {
    return e.what();
  }
  return "";
}

TEST(Settings, UnsetOrEmptyVariablesGiveTheDefaults) {
  const Settings defaults;
  for (const bool empty : {false, true}) {
    std::map<std::string, std::string> set;
    if (empty)
      for (const char* name : kVariables) set[name] = "";
    const Environment env(set);
    const Settings s = cli::settings_from_environment();
    EXPECT_EQ(s.worker, "");
    EXPECT_EQ(s.include_dir, "");
    EXPECT_EQ(s.adapters_dir, "");
    EXPECT_EQ(s.python, "");
    EXPECT_EQ(s.cuda_arch, "90a");
    EXPECT_EQ(s.torch_pch, "");
    EXPECT_EQ(s.corpus_verifier, "");
    EXPECT_EQ(s.threads, 0);
    EXPECT_EQ(s.max_elements, int64_t{1} << 27);
    EXPECT_EQ(s.reference_cache_bytes, 0);
    EXPECT_EQ(s.reference_cache_entry_bytes, int64_t{256} << 20);
    EXPECT_EQ(s.sandbox_off, 0u);
    EXPECT_TRUE(s.standby);
    EXPECT_TRUE(s.pool);
    EXPECT_EQ(s.pool_start, PoolStart::by_cores);
    EXPECT_TRUE(s.sanitizer_port_ranges);
    EXPECT_EQ(s.cuda_arch, defaults.cuda_arch);
  }
}

TEST(Settings, EachVariableSetsItsField) {
  const Environment env({{"KCV_WORKER", "/w/kcv-worker"},
                         {"KCV_INCLUDE_DIR", "/i"},
                         {"KCV_ADAPTERS_DIR", "/a"},
                         {"KCV_PYTHON", "/venv/bin/python"},
                         {"KCV_CUDA_ARCH", "100a"},
                         {"KCV_TORCH_PCH", R"({"entries": []})"},
                         {"KCV_CORPUS_VERIFIER", "/v"},
                         {"KCV_THREADS", "7"},
                         {"KCV_MAX_ELEMENTS", "263"},
                         {"KCV_REFERENCE_CACHE_BYTES", "1000"},
                         {"KCV_REFERENCE_CACHE_ENTRY_BYTES", "100"},
                         {"KCV_REFERENCE_CACHE_DIR_BYTES", "5000000"},
                         {"KCV_SANDBOX_OFF", "net, seccomp"},
                         {"KCV_STANDBY", "0"},
                         {"KCV_POOL", "0"},
                         {"KCV_POOL_START", "after"},
                         {"KCV_SANITIZER_PORT_RANGES", "0"}});
  const Settings s = cli::settings_from_environment();
  EXPECT_EQ(s.worker, "/w/kcv-worker");
  EXPECT_EQ(s.include_dir, "/i");
  EXPECT_EQ(s.adapters_dir, "/a");
  EXPECT_EQ(s.python, "/venv/bin/python");
  EXPECT_EQ(s.cuda_arch, "100a");
  EXPECT_EQ(s.torch_pch, R"({"entries": []})");
  EXPECT_EQ(s.corpus_verifier, "/v");
  EXPECT_EQ(s.threads, 7);
  EXPECT_EQ(s.max_elements, 263);
  EXPECT_EQ(s.reference_cache_bytes, 1000);
  EXPECT_EQ(s.reference_cache_entry_bytes, 100);
  EXPECT_EQ(s.reference_cache_dir_bytes, 5000000);
  EXPECT_EQ(s.sandbox_off, sandbox::parse_off("net,seccomp"));
  EXPECT_NE(s.sandbox_off, 0u);
  EXPECT_FALSE(s.standby);
  EXPECT_FALSE(s.pool);
  EXPECT_EQ(s.pool_start, PoolStart::after);
  EXPECT_FALSE(s.sanitizer_port_ranges);
}

// A corpus run's explicit verifier executable (CorpusOptions::verifier, KCV_CORPUS_VERIFIER) is
// taken to be a kcv CLI of its own: settings_variables gives it the run's settings as the variables
// its mapping reads, every one of them, and the mapping gives back exactly those settings. (The
// default, forked pairs inherit the Settings in memory.)
TEST(Settings, TheVariablesOfSettingsMapBackOntoThem) {
  std::vector<Settings> cases(3);
  Settings& all = cases[1];  // every field off its default
  all.worker = "/w/kcv-worker";
  all.include_dir = "/i";
  all.adapters_dir = "/a";
  all.python = "/venv/bin/python";
  all.cuda_arch = "100a";
  all.torch_pch = R"({"entries": []})";
  all.corpus_verifier = "/v";
  all.threads = 7;
  all.max_elements = 263;
  all.reference_cache_bytes = 1000;
  all.reference_cache_entry_bytes = 100;
  all.reference_cache_dir_bytes = 5000000;
  all.sandbox_off = sandbox::parse_off("net,seccomp");
  all.standby = false;
  all.pool = false;
  all.pool_start = PoolStart::after;
  all.sanitizer_port_ranges = false;
  cases[2].pool_start = PoolStart::during;
  for (const Settings& s : cases) {
    const auto variables = settings_variables(s);
    ASSERT_EQ(variables.size(), std::size(kVariables));
    std::map<std::string, std::string> set;
    for (std::size_t i = 0; i < variables.size(); ++i) {
      EXPECT_EQ(variables[i].first, kVariables[i]);
      if (!variables[i].second.empty()) set[variables[i].first] = variables[i].second;
    }
    const Environment env(set);
    EXPECT_TRUE(cli::settings_from_environment() == s) << variables[0].second << " " << variables[14].second;
  }
}

TEST(Settings, OnlyZeroTurnsASwitchOffAndAnyOtherPoolStartIsDuring) {
  const Environment env({{"KCV_STANDBY", "1"}, {"KCV_POOL", "no"}, {"KCV_SANITIZER_PORT_RANGES", "off"},
                         {"KCV_POOL_START", "during"}});
  const Settings s = cli::settings_from_environment();
  EXPECT_TRUE(s.standby);
  EXPECT_TRUE(s.pool);
  EXPECT_TRUE(s.sanitizer_port_ranges);
  EXPECT_EQ(s.pool_start, PoolStart::during);
}

TEST(Settings, BadValuesKeepTheirMessages) {
  EXPECT_EQ(mapping_error({{"KCV_THREADS", "0"}}), "KCV_THREADS='0' is not a positive integer");
  EXPECT_EQ(mapping_error({{"KCV_THREADS", "4097"}}), "KCV_THREADS='4097' is not a positive integer");
  EXPECT_EQ(mapping_error({{"KCV_MAX_ELEMENTS", "-5"}}), "KCV_MAX_ELEMENTS='-5' is not a positive integer");
  EXPECT_EQ(mapping_error({{"KCV_REFERENCE_CACHE_BYTES", "1e9"}}),
            "KCV_REFERENCE_CACHE_BYTES='1e9' is not a positive integer");
  EXPECT_EQ(mapping_error({{"KCV_REFERENCE_CACHE_ENTRY_BYTES", "x"}}),
            "KCV_REFERENCE_CACHE_ENTRY_BYTES='x' is not a positive integer");
  EXPECT_EQ(mapping_error({{"KCV_REFERENCE_CACHE_DIR_BYTES", "-1"}}),
            "KCV_REFERENCE_CACHE_DIR_BYTES='-1' is not a positive integer");
  const std::string off = mapping_error({{"KCV_SANDBOX_OFF", "net,bogus"}});
  EXPECT_EQ(off.rfind("KCV_SANDBOX_OFF: unknown protection 'bogus' (known: ", 0), 0u) << off;
}

/// A verification of the add control, one gate, under `settings`.
VerifyOptions add_ok(const Settings& settings) {
  VerifyOptions o;
  o.op = "add";
  o.candidate = std::string(KCV_SOURCE_DIR) + "/controls/cpu/add/add_ok.c";
  o.gates = {"numerics"};
  o.seed = 23;
  o.settings = settings;
  return o;
}

TEST(Settings, TheLibraryTakesTheGivenSettingsNotTheEnvironment) {
  const std::string real_worker = default_worker_path(Settings{});
  {
    // The environment names the real worker, the settings a missing one: the settings win.
    const Environment env({{"KCV_WORKER", real_worker}});
    Settings bogus;
    bogus.worker = "/nonexistent/kcv-worker";
    try {
      verify(add_ok(bogus));
      ADD_FAILURE() << "the worker named in the settings was not used";
    } catch (const SetupError& e) {
      EXPECT_STREQ(e.what(), "kcv-worker not found at /nonexistent/kcv-worker (set KCV_WORKER)");
    }
  }
  {
    // The environment names a missing worker and protections no sandbox has: default settings
    // verify as if the environment were empty.
    const Environment env({{"KCV_WORKER", "/nonexistent/kcv-worker"},
                           {"KCV_SANDBOX_OFF", "bogus"},
                           {"KCV_THREADS", "0"}});
    const Report r = verify(add_ok(Settings{}));
    EXPECT_EQ(r.verdict, Verdict::pass);
    EXPECT_TRUE(r.pass_withheld.empty()) << r.pass_withheld;
  }
}

}  // namespace
}  // namespace kcv
