// SPDX-License-Identifier: MIT
// Staging: this binary, its own dynamic loader and every shared library it can load, copied once
// to the shared mount, so that a launch runs on the cataloged Prime-RL image as it is, whatever
// its distribution (docs/staging.md). The name of a stage is fixed at build time (version and
// ELF build id), so previews name it without reading anything; staging verifies what it copies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pb::staging {

// How a stage (or staged tool) that is already there is checked (docs/staging.md "Reuse"):
// `cached` hashes only the files whose state (device, inode, size, mtime, ctime) changed since
// this machine last verified them, as git's index does, and remembers the rest in
// ~/.cache/primebeaker; `full` hashes every file and remembers nothing.
enum class Verify { cached, full };

// Which build a stage holds.
struct Identity {
  std::string version;  // PB_VERSION
  std::string build_id; // lowercase hex: the ELF build id, else the SHA-256 of the program
};

// This binary's identity. Reads nothing when the link recorded a build id (every build here).
const Identity &current();

// "<version>-<first 16 hex digits of the build id>".
std::string directory_name(const Identity &identity);

// Where a stage lives: <scratch>/primebeaker/bin/<directory_name>. Pure.
std::filesystem::path stage_directory(std::string_view scratch_dir, const Identity &identity);

// The program a rendered spec runs: <stage_directory>/primebeaker (a /bin/sh wrapper). Pure.
std::filesystem::path staged_program(std::string_view scratch_dir, const Identity &identity);

// The files of a stage, relative to its directory.
inline constexpr std::string_view k_wrapper = "primebeaker";
inline constexpr std::string_view k_program = "libexec/primebeaker";
inline constexpr std::string_view k_library_dir = "lib";
inline constexpr std::string_view k_python_dir = "python";   // the environments' shim package
inline constexpr std::string_view k_manifest = "SHA256SUMS"; // `sha256sum -c` reads it

// Libraries the binary dlopen()s on first use rather than links (their callers name the same
// sonames); staging loads them so that they and their dependencies are copied too.
const std::vector<std::string> &on_demand_libraries();

// What goes into a stage, gathered from the running process (pure once gathered).
struct Contents {
  std::filesystem::path program;                // the ELF of this binary
  std::filesystem::path loader;                 // the dynamic loader it runs under
  std::vector<std::filesystem::path> libraries; // every other shared object, loader excluded
  std::string wrapper_text;                     // the /bin/sh wrapper
};

// The wrapper: runs lib/<loader_name> --library-path lib --argv0 "$0" libexec/primebeaker "$@"
// from its own directory; exports PRIMEBEAKER_BIN (unless set) and puts python/ first on
// PYTHONPATH, so that Prime-RL, started by the node runtime, imports the staged shim package
// and it runs this same build. Pure.
std::string wrapper_text(const Identity &identity, std::string_view loader_name);

// Loads on_demand_libraries() (those present on this machine) and lists what is mapped.
Contents gather_contents();

enum class Outcome { created, reused };

struct Staged {
  std::filesystem::path directory;
  std::filesystem::path program; // the wrapper: what specs run
  Outcome outcome = Outcome::created;
  std::uintmax_t bytes_copied = 0; // created: what was copied and written
  double seconds = 0;              // how long staging took (building or checking)
};

// The one line a launch shows by default: "staged primebeaker <version> at <dir> (reused)" or
// "(copied <N> MB in <X.X> s)". Pure.
std::string summary(const Staged &staged, const Identity &identity);

// Another program staged beside this one (the `beaker` CLI the recovery controller runs,
// docs/recovery.md "The controller"): a single static file, content-addressed as
// <scratch>/primebeaker/tools/<name>-<first 16 hex digits of its SHA-256>/<name>, with the same
// manifest. Pure.
struct Tool {
  std::string name;            // "beaker"
  std::filesystem::path local; // the file on this machine
  std::string sha256;          // of `local`, lowercase hex
};
std::filesystem::path tool_directory(std::string_view scratch_dir, const Tool &tool);
std::filesystem::path staged_tool(std::string_view scratch_dir, const Tool &tool);
// The SHA-256 of `path` (read in pieces). Throws pb::Error (exit 1) naming it. `cached`: the one
// this machine remembers for the file's unchanged state, if any (nothing is written).
std::string file_sha256(const std::filesystem::path &path, Verify how = Verify::full);

// The effect behind launches, so that tests can record it.
class Stager {
public:
  explicit Stager(Verify verify = Verify::cached) : m_verify(verify) {}
  virtual ~Stager() = default;
  // Makes `directory` a complete stage of this binary, or checks the one there. Throws
  // pb::Error (exit 1) with one line naming the directory and the reason.
  virtual Staged stage(const std::filesystem::path &directory) = 0;
  // Makes `directory` (tool_directory()) a stage of `tool`, or checks the one there: the same
  // guarantees as stage(). The default is the real thing.
  virtual Staged stage_tool(const std::filesystem::path &directory, const Tool &tool);

protected:
  Verify m_verify;
};

// The real thing: a stage present is verified against its manifest and this binary (a mismatch
// is refused, never repaired in place); an absent one is built in a temporary sibling directory,
// every copy hashed while written and read back, the manifest written last, then renamed into
// place in one step. A concurrent stager that wins the rename leaves ours discarded and its
// stage verified. A failure removes the temporary directory.
class RealStager final : public Stager {
public:
  using Stager::Stager;
  Staged stage(const std::filesystem::path &directory) override;
};

// Checks a stage against its manifest (every file present with its SHA-256) and that its
// program is byte for byte `program` (hashed). Throws pb::Error (exit 1) naming the first
// mismatch.
void verify(const std::filesystem::path &directory,
            const std::filesystem::path &program,
            Verify how = Verify::full);

} // namespace pb::staging
