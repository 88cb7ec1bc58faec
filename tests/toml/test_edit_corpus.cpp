// SPDX-License-Identifier: MIT
// The edit battery on real files (../shared/corpus/prime-rl, primebeaker-examples): exact
// expected outputs, written as "the original with exactly this replacement", so every byte
// outside the splice is asserted unchanged. Plus the CRLF and BOM variants of every corpus file.
#include "test_support.hpp"

#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/reference.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace {

using pb::toml::Document;

std::string corpus_file(const std::string &name) {
  return pb::test::read_file(pb::test::shared_dir() / "corpus" / name);
}

// `text` with the single occurrence of `from` replaced by `to` (fails the test when `from` is
// missing or ambiguous).
std::string replaced(const std::string &text, const std::string &from, const std::string &to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "ambiguous: " << from;
  if (at == std::string::npos) {
    return text;
  }
  return text.substr(0, at) + to + text.substr(at + from.size());
}

struct Case {
  const char *file;
  const char *op; // "set", "set-string", "unset", "prune"
  const char *path;
  const char *value;
  const char *from; // the original bytes the edit replaces
  const char *to;
};

const Case battery[] = {
    // change a value
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "max_steps",
     "40",
     "max_steps = 20\n",
     "max_steps = 40\n"},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set-string",
     "wandb.name",
     "reverse-text-resume",
     "name = \"reverse-text\"\n\n[orch",
     "name = \"reverse-text-resume\"\n\n[orch"},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "trainer.optim.lr",
     "1e-5",
     "lr = 3e-6",
     "lr = 1e-5"},
    // add a key to an existing table (and to a table at the end of a file without final newline)
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "trainer.optim.weight_decay",
     "0.01",
     "lr = 3e-6\n",
     "lr = 3e-6\nweight_decay = 0.01\n"},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "inference.port",
     "8000",
     "[inference]",
     "[inference]\nport = 8000"},
    // add a new table, and a new nested table after its parent's last descendant
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "ckpt.resume_step",
     "10",
     "[inference]",
     "[inference]\n\n[ckpt]\nresume_step = 10"},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "orchestrator.sampling.temperature",
     "1.0",
     "max_tokens = 128\n",
     "max_tokens = 128\ntemperature = 1.0\n"},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "trainer.model.compile",
     "true",
     "lr = 3e-6\n\n",
     "lr = 3e-6\n\n[trainer.model]\ncompile = true\n\n"},
    // arrays of tables: [n], [+], [-1]
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "orchestrator.env[0].id",
     "\"math\"",
     "id = \"reverse-text\"",
     "id = \"math\""},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "orchestrator.env[-1].args",
     "{ split = \"train\" }",
     "id = \"reverse-text\"\n",
     "id = \"reverse-text\"\nargs = { split = \"train\" }\n"},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "set",
     "orchestrator.env[+]",
     "{ id = \"math\" }",
     "id = \"reverse-text\"\n\n",
     "id = \"reverse-text\"\n\n[[orchestrator.env]]\nid = \"math\"\n\n"},
    // unset, with --prune
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "unset",
     "trainer.optim.lr",
     "",
     "lr = 3e-6\n",
     ""},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "prune",
     "trainer.optim.lr",
     "",
     "[trainer.optim]\nlr = 3e-6\n\n",
     ""},
    {"prime-rl/v0.2-examples-reverse_text-rl.toml",
     "unset",
     "orchestrator.env[0]",
     "",
     "[[orchestrator.env]]\nid = \"reverse-text\"\n\n",
     ""},
    // a header with a same-line comment and an empty body
    {"prime-rl/main-559b4477-examples-basic-wordle-rl.toml",
     "set",
     "ckpt.interval",
     "50",
     "[ckpt] # Checkpoint at the end of training\n",
     "[ckpt] # Checkpoint at the end of training\ninterval = 50\n"},
    {"prime-rl/main-559b4477-examples-basic-wordle-rl.toml",
     "set",
     "monitors.wandb.name",
     "\"wordle-2\"",
     "name = \"wordle\"\n\n[ckpt]",
     "name = \"wordle-2\"\n\n[ckpt]"},
    // dotted key under a [table] that has no sub-table headers
    {"prime-rl/main-559b4477-examples-basic-wordle-rl.toml",
     "set",
     "orchestrator.train.source[0].env.player.harness.args.k",
     "1",
     "id = \"null\"\n",
     "id = \"null\"\nargs.k = 1\n"},
    {"prime-rl/main-559b4477-examples-basic-wordle-rl.toml",
     "unset",
     "deployment.num_infer_gpus",
     "",
     "num_infer_gpus = 6\n",
     ""},
    // the resume engineer's edits on the bundled RL example
    {"primebeaker-examples/examples-rl-config.toml",
     "set",
     "clean_output_dir",
     "true",
     "clean_output_dir = false",
     "clean_output_dir = true"},
    {"primebeaker-examples/examples-rl-config.toml",
     "set-string",
     "wandb.name",
     "primebeaker-tiny-rl-resume",
     "name = \"primebeaker-tiny-rl\"",
     "name = \"primebeaker-tiny-rl-resume\""},
    {"primebeaker-examples/examples-rl-config.toml",
     "set",
     "wandb.tags[+]",
     "\"resume\"",
     "\"tiny-data\"]",
     "\"tiny-data\", \"resume\"]"},
    {"primebeaker-examples/examples-rl-config.toml",
     "set",
     "max_steps",
     "4",
     "max_steps = 2\n",
     "max_steps = 4\n"},
};

std::string run(const Case &c, const std::string &text) {
  const auto doc = Document::parse(text, c.file);
  const std::string op = c.op;
  if (op == "set") {
    return pb::toml::set(doc, c.path, c.value);
  }
  if (op == "set-string") {
    return pb::toml::set_string(doc, c.path, c.value);
  }
  return pb::toml::unset(doc, c.path, {false, op == "prune"});
}

TEST(EditCorpus, BatteryHasExactOutputs) {
  for (const auto &c : battery) {
    SCOPED_TRACE(std::string(c.op) + " " + c.path + " on " + c.file);
    const std::string text = corpus_file(c.file);
    EXPECT_EQ(run(c, text), replaced(text, c.from, c.to));
  }
}

std::string to_crlf(const std::string &text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '\n') {
      out += '\r';
    }
    out += ch;
  }
  return out;
}

// The same battery on CRLF + BOM copies gives the CRLF + BOM copy of the expected output.
TEST(EditCorpus, BatteryOnCrlfAndBomCopies) {
  for (const auto &c : battery) {
    SCOPED_TRACE(std::string(c.op) + " " + c.path + " on " + c.file);
    const std::string text = corpus_file(c.file);
    const std::string expected = replaced(text, c.from, c.to);
    EXPECT_EQ(run(c, to_crlf(text)), to_crlf(expected));
    EXPECT_EQ(run(c, "\xEF\xBB\xBF" + text), "\xEF\xBB\xBF" + expected);
  }
}

// Generic edits on every corpus file, in LF, CRLF, BOM and no-final-newline variants: a new
// root key, a new table, a change of the first leaf; meaning checked by toml++.
TEST(EditCorpus, GenericEditsOnEveryFileAndVariant) {
  int files = 0;
  for (const char *folder : {"prime-rl", "primebeaker-examples"}) {
    for (const auto &entry :
         std::filesystem::directory_iterator(pb::test::shared_dir() / "corpus" / folder)) {
      if (entry.path().extension() != ".toml") {
        continue;
      }
      ++files;
      const std::string original = pb::test::read_file(entry.path());
      std::string no_eol = original;
      while (!no_eol.empty() && no_eol.back() == '\n') {
        no_eol.pop_back();
      }
      for (const std::string &text :
           {original, to_crlf(original), "\xEF\xBB\xBF" + original, no_eol}) {
        SCOPED_TRACE(entry.path().string());
        auto doc = Document::parse(text, "f");
        const bool crlf = text.find("\r\n") != std::string::npos;
        std::string out = pb::toml::Editor(doc)
                              .set("pb_added_key", "\"v\"")
                              .set("pb_new_table.value", "[1, 2]")
                              .text();
        const auto edited = Document::parse(out, "out");
        EXPECT_EQ(*edited.root().find("pb_added_key")->string(), "v");
        EXPECT_EQ(edited.root().find_path({"pb_new_table", "value"})->array()->size(), 2U);
        // Line endings and the BOM stay as they were; the end of file keeps its newline state.
        EXPECT_EQ(crlf, out.find("\r\n") != std::string::npos);
        if (crlf) {
          EXPECT_EQ(out.find("\n"), out.find("\r\n") + 1);
          for (std::size_t i = 0; i < out.size(); ++i) {
            if (out[i] == '\n') {
              ASSERT_EQ(out[i - 1], '\r');
            }
          }
        }
        EXPECT_EQ(text.rfind("\xEF\xBB\xBF", 0) == 0, out.rfind("\xEF\xBB\xBF", 0) == 0);
        EXPECT_EQ(!text.empty() && text.back() == '\n', out.back() == '\n');
        // Removing them again gives the input back exactly.
        out = pb::toml::Editor(Document::parse(out, "out"))
                  .unset("pb_new_table")
                  .unset("pb_added_key")
                  .text();
        EXPECT_EQ(out, text);
      }
    }
  }
  EXPECT_GE(files, 20);
}

} // namespace
