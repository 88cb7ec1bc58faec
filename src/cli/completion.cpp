// SPDX-License-Identifier: MIT
// Shell completion scripts generated from the command tree (docs/cli.md, "Shell completion").
// Each script carries the tree as data (per command path: its subcommands, its flags, the flags
// that take a value) and a small walker that finds the path typed so far.
#include <primebeaker/cli/dispatch.hpp>
#include <primebeaker/core/error.hpp>

#include <algorithm>
#include <functional>

namespace pb::cli {

namespace {

struct CommandInfo {
  std::string path;                                             // "rl preview"; "" for the root
  std::vector<std::pair<std::string, std::string>> subcommands; // name, description
  std::vector<std::pair<std::string, std::string>> flags;       // spelling, description
  std::vector<std::string> valued;                              // flags that take a value
};

bool visible(const CLI::App &app) {
  return !app.get_group().empty();
}

void collect(const CLI::App &app,
             const std::string &path,
             const std::vector<const CLI::Option *> &inherited,
             std::vector<CommandInfo> &out) {
  CommandInfo info;
  info.path = path;
  auto options = app.get_options(
      [](const CLI::Option *o) { return o->nonpositional() && !o->get_group().empty(); });
  options.insert(options.end(), inherited.begin(), inherited.end());
  for (const CLI::Option *option : options) {
    std::vector<std::string> spellings;
    for (const auto &s : option->get_snames()) {
      spellings.push_back("-" + s);
    }
    for (const auto &l : option->get_lnames()) {
      spellings.push_back("--" + l);
    }
    for (const auto &spelling : spellings) {
      info.flags.emplace_back(spelling, option->get_description());
      if (takes_value(*option)) {
        info.valued.push_back(spelling);
      }
    }
  }
  const auto subcommands = app.get_subcommands([](const CLI::App *) { return true; });
  for (const CLI::App *sub : subcommands) {
    if (visible(*sub)) {
      info.subcommands.emplace_back(sub->get_name(), sub->get_description());
    }
  }
  out.push_back(info);
  // Root options other than help fall through to every subcommand (-v, --verbose).
  std::vector<const CLI::Option *> passed = inherited;
  if (path.empty()) {
    for (const CLI::Option *option : app.get_options([&app](const CLI::Option *o) {
           return o->nonpositional() && o != app.get_help_ptr() && o != app.get_help_all_ptr() &&
                  !o->check_lname("version");
         })) {
      passed.push_back(option);
    }
  }
  for (const CLI::App *sub : subcommands) {
    if (visible(*sub)) {
      collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), passed, out);
    }
  }
}

std::vector<CommandInfo> command_infos(const CLI::App &root) {
  std::vector<CommandInfo> out;
  collect(root, "", {}, out);
  return out;
}

std::string names_of(const std::vector<std::pair<std::string, std::string>> &items) {
  std::string out;
  for (const auto &[name, description] : items) {
    out += (out.empty() ? "" : " ") + name;
  }
  return out;
}

std::string words(const std::vector<std::string> &items) {
  std::string out;
  for (const auto &item : items) {
    out += (out.empty() ? "" : " ") + item;
  }
  return out;
}

// One line of text for a single-quoted shell string ('' closes, \' adds a quote, ' reopens).
std::string single_quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else if (c == '\n' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A case statement that prints `field(info)` for the command path in $1.
std::string case_function(const std::string &name,
                          const std::vector<CommandInfo> &infos,
                          const std::function<std::string(const CommandInfo &)> &field) {
  std::string out = name + "() {\n  case \"$1\" in\n";
  for (const auto &info : infos) {
    const std::string value = field(info);
    if (!value.empty()) {
      out += "  " + single_quoted(info.path) + ") echo " + single_quoted(value) + " ;;\n";
    }
  }
  return out + "  esac\n}\n";
}

std::string bash_script(const std::vector<CommandInfo> &infos) {
  std::string out = "# bash completion for primebeaker (generated: primebeaker completion bash)\n";
  out += case_function("_primebeaker_subcommands", infos, [](const CommandInfo &i) {
    return names_of(i.subcommands);
  });
  out += case_function(
      "_primebeaker_flags", infos, [](const CommandInfo &i) { return names_of(i.flags); });
  out += case_function(
      "_primebeaker_valued", infos, [](const CommandInfo &i) { return words(i.valued); });
  out += R"SH(_primebeaker() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" word subs i
  ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD - 1]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    [[ $word == -* ]] && continue
    subs=" $(_primebeaker_subcommands "$path") "
    [[ $subs == *" $word "* ]] && path="${path:+$path }$word"
  done
  COMPREPLY=()
  if [[ $prev == -* && " $(_primebeaker_valued "$path") " == *" $prev "* ]]; then
    return 0 # a flag's value: files (complete -o default)
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_primebeaker_flags "$path")" -- "$cur")
  else
    subs="$(_primebeaker_subcommands "$path")"
    [[ -n $subs ]] && mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
  fi
  return 0
}
complete -o default -F _primebeaker primebeaker
)SH";
  return out;
}

// zsh: `print -l` one "name:description" item per line for _describe.
std::string
zsh_list_function(const std::string &name,
                  const std::vector<CommandInfo> &infos,
                  const std::function<const std::vector<std::pair<std::string, std::string>> &(
                      const CommandInfo &)> &field) {
  std::string out = name + "() {\n  case \"$1\" in\n";
  for (const auto &info : infos) {
    const auto &items = field(info);
    if (items.empty()) {
      continue;
    }
    out += "  " + single_quoted(info.path) + ") print -l --";
    for (const auto &[item, description] : items) {
      std::string escaped;
      for (const char c : description) {
        escaped += c == ':' ? std::string("\\:") : std::string(1, c);
      }
      out += " " + single_quoted(item + ":" + escaped);
    }
    out += " ;;\n";
  }
  return out + "  esac\n}\n";
}

std::string zsh_script(const std::vector<CommandInfo> &infos) {
  std::string out = "#compdef primebeaker\n"
                    "# zsh completion for primebeaker (generated: primebeaker completion zsh)\n";
  out += case_function("_primebeaker_subcommand_names", infos, [](const CommandInfo &i) {
    return names_of(i.subcommands);
  });
  out += zsh_list_function(
      "_primebeaker_subcommands", infos, [](const CommandInfo &i) -> const auto & {
        return i.subcommands;
      });
  out += zsh_list_function(
      "_primebeaker_flags", infos, [](const CommandInfo &i) -> const auto & { return i.flags; });
  out += case_function(
      "_primebeaker_valued", infos, [](const CommandInfo &i) { return words(i.valued); });
  out += R"SH(_primebeaker() {
  local cmdpath="" word i prev="${words[CURRENT-1]}"
  local -a subs items
  for ((i = 2; i < CURRENT; i++)); do
    word="${words[i]}"
    [[ $word == -* ]] && continue
    subs=(${=$(_primebeaker_subcommand_names "$cmdpath")})
    (( ${subs[(Ie)$word]} )) && cmdpath="${cmdpath:+$cmdpath }$word"
  done
  if [[ $prev == -* && " $(_primebeaker_valued "$cmdpath") " == *" $prev "* ]]; then
    _files
    return
  fi
  if [[ ${words[CURRENT]} == -* ]]; then
    items=(${(f)"$(_primebeaker_flags "$cmdpath")"})
    _describe -t flags 'flag' items
  else
    items=(${(f)"$(_primebeaker_subcommands "$cmdpath")"})
    if (( ${#items} )); then
      _describe -t commands 'command' items
    else
      _files
    fi
  fi
}
if [[ $funcstack[1] == _primebeaker ]]; then
  _primebeaker "$@"
else
  compdef _primebeaker primebeaker
fi
)SH";
  return out;
}

std::string fish_script(const std::vector<CommandInfo> &infos) {
  std::string out = "# fish completion for primebeaker (generated: primebeaker completion fish)\n";
  out += "function __primebeaker_subcommands\n  switch \"$argv[1]\"\n";
  for (const auto &info : infos) {
    if (!info.subcommands.empty()) {
      out += "    case " + single_quoted(info.path) + "\n      echo " +
             single_quoted(names_of(info.subcommands)) + "\n";
    }
  }
  out += "  end\nend\n";
  out += R"SH(function __primebeaker_path
  set -l cmdpath ""
  for word in (commandline -opc)[2..-1]
    string match -q -- '-*' $word; and continue
    set -l subs (string split ' ' -- (__primebeaker_subcommands "$cmdpath"))
    if contains -- $word $subs
      if test -z "$cmdpath"
        set cmdpath $word
      else
        set cmdpath "$cmdpath $word"
      end
    end
  end
  echo $cmdpath
end
function __primebeaker_at
  set -l current (__primebeaker_path)
  test "$current" = "$argv[1]"
end
function __primebeaker_expects_command
  set -l current (__primebeaker_path)
  set -l subs (__primebeaker_subcommands "$current")
  test -n "$subs"
end
complete -c primebeaker -f -n __primebeaker_expects_command
)SH";
  for (const auto &info : infos) {
    const std::string condition =
        "-n " + single_quoted("__primebeaker_at " + single_quoted(info.path));
    for (const auto &[name, description] : info.subcommands) {
      out += "complete -c primebeaker " + condition + " -a " + single_quoted(name) + " -d " +
             single_quoted(description) + "\n";
    }
    for (const auto &[spelling, description] : info.flags) {
      const bool valued =
          std::find(info.valued.begin(), info.valued.end(), spelling) != info.valued.end();
      const std::string kind = spelling.rfind("--", 0) == 0 ? " -l " : " -s ";
      const std::string bare = spelling.substr(spelling.rfind("--", 0) == 0 ? 2 : 1);
      out += "complete -c primebeaker " + condition + kind + single_quoted(bare) +
             (valued ? " -r" : "") + " -d " + single_quoted(description) + "\n";
    }
  }
  return out;
}

} // namespace

std::string completion_script(const CLI::App &root, std::string_view shell) {
  const auto infos = command_infos(root);
  if (shell == "bash") {
    return bash_script(infos);
  }
  if (shell == "zsh") {
    return zsh_script(infos);
  }
  if (shell == "fish") {
    return fish_script(infos);
  }
  throw usage_error("completion: unknown shell '" + std::string(shell) +
                    "' (expected bash, zsh or fish)");
}

} // namespace pb::cli
