// SPDX-License-Identifier: MIT
// The web terminal: `cat <asset>`, `browse <url>` and plain terminal commands composed over
// the terminal and fetch clients (docs/tool-services.md "Web terminal").
#include <primebeaker/core/random.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/tool_services/clients.hpp>

#include <fmt/format.h>

#include <regex>

namespace pb::tool_services {
namespace py = environments::py;

namespace {

constexpr const char *k_asset_terminal = "Asset terminal execution";

OrderedJson layer_error(std::string stderr_text) {
  return {{"success", false}, {"stdout", ""}, {"stderr", std::move(stderr_text)}, {"exit_code", 1}};
}

std::string new_asset_id() {
  return "asset_" + random::hex_id(16);
}

// The text of a URL-fetch result: data.content or data.text when non-empty.
std::optional<std::string> fetched_text(const OrderedJson &result) {
  if (!result.is_object()) {
    return std::nullopt;
  }
  const OrderedJson data = result.value("data", OrderedJson());
  if (!data.is_object()) {
    return std::nullopt;
  }
  for (const char *key : {"content", "text"}) {
    const OrderedJson value = data.value(key, OrderedJson());
    if (value.is_string() && !value.get<std::string>().empty()) {
      return value.get<std::string>();
    }
  }
  return std::nullopt;
}

struct Fetched {
  std::optional<std::string> content;
  std::string error;
};

Fetched
fetch_content(const FetchConfig &config, const std::string &url, const CallControl &control) {
  try {
    const OrderedJson result = fetch_url(config, url, control);
    if (result.value("success", OrderedJson()) != OrderedJson(true)) {
      const OrderedJson error = result.value("error", OrderedJson("the fetch did not succeed"));
      return {std::nullopt, py::str(error)};
    }
    if (auto text = fetched_text(result)) {
      return {std::move(text), {}};
    }
    return {std::nullopt, "the fetch returned no content"};
  } catch (const ServiceError &error) {
    if (error.kind() == FailureKind::cancelled) {
      throw;
    }
    return {std::nullopt, error.what()};
  }
}

OrderedJson run_pipeline(const WebTerminalConfig &config,
                         const std::string &pipeline,
                         const std::string &contents,
                         const CallControl &control) {
  TerminalCall call;
  call.command = pipeline.empty() ? "cat" : pipeline;
  call.contents = contents;
  call.truncation = config.truncation;
  return terminal_request(config.terminal, call, k_asset_terminal, control);
}

} // namespace

OrderedJson WebAsset::to_json() const {
  return {{"id", id}, {"url", url}, {"content", content ? OrderedJson(*content) : OrderedJson()}};
}

void WebAssetStore::seed(const OrderedJson &web_pages) {
  if (!web_pages.is_object()) {
    return;
  }
  for (const auto &[url, value] : web_pages.items()) {
    OrderedJson page = value;
    if (page.is_string()) {
      const auto parsed = py::try_loads(page.get<std::string>());
      if (parsed && parsed->is_object() && parsed->contains("mode") && parsed->contains("data")) {
        page = *parsed; // a serialised URL-fetch envelope
      }
    }
    if (page.is_string()) {
      m_seeded[url] = page.get<std::string>();
    } else if (auto text = fetched_text(page)) {
      m_seeded[url] = *text;
    } // an envelope without a body is a cache miss
  }
}

WebAsset &WebAssetStore::register_url(const std::string &url) {
  const auto known = m_ids.find(url);
  if (known != m_ids.end()) {
    return m_assets.at(known->second);
  }
  std::string id = new_asset_id();
  while (m_assets.contains(id)) {
    id = new_asset_id();
  }
  m_ids[url] = id;
  WebAsset &asset = m_assets[id];
  asset.id = id;
  asset.url = url;
  return asset;
}

WebAsset *WebAssetStore::find(const std::string &id) {
  const auto found = m_assets.find(id);
  return found == m_assets.end() ? nullptr : &found->second;
}

std::optional<std::string> WebAssetStore::seeded(const std::string &url) const {
  const auto found = m_seeded.find(url);
  return found == m_seeded.end() ? std::nullopt : std::optional(found->second);
}

OrderedJson web_terminal_execute(const WebTerminalConfig &config,
                                 WebAssetStore &store,
                                 const std::string &command,
                                 const std::string &contents,
                                 const CallControl &control) {
  static const std::regex cat_form(R"(^\s*cat\s+([^|]+?)\s*(?:\|\s*([\s\S]*?))?\s*$)");
  static const std::regex browse_form(R"(^\s*browse\s+(\S+)\s*(?:\|\s*([\s\S]*?))?\s*$)");
  std::smatch match;
  if (std::regex_match(command, match, cat_form)) {
    std::vector<std::string> parts;
    for (const std::string &id : py::split(match[1].str())) {
      WebAsset *asset = store.find(id);
      if (asset == nullptr) {
        return layer_error(fmt::format("cat: {}: No such file or directory", id));
      }
      if (!asset->content) {
        Fetched fetched = fetch_content(config.fetch, asset->url, control);
        if (!fetched.content) {
          return layer_error(
              fmt::format("cat: {}: failed to fetch {}: {}", id, asset->url, fetched.error));
        }
        asset->content = std::move(fetched.content);
      }
      parts.push_back(*asset->content);
    }
    return run_pipeline(config, match[2].str(), text::join(parts, "\n\n"), control);
  }
  if (std::regex_match(command, match, browse_form)) {
    const std::string url = match[1].str();
    WebAsset &asset = store.register_url(url);
    bool fetched_now = false;
    if (auto seeded = store.seeded(url); seeded && !asset.content) {
      asset.content = std::move(seeded);
    }
    if (!asset.content) {
      Fetched fetched = fetch_content(config.fetch, url, control);
      if (!fetched.content) {
        return layer_error(
            fmt::format("browse: {}: failed to fetch {}: {}", asset.id, url, fetched.error));
      }
      asset.content = std::move(fetched.content);
      fetched_now = true;
    }
    OrderedJson output = run_pipeline(config, match[2].str(), *asset.content, control);
    if (config.capture_web_assets && fetched_now) {
      output["web_asset"] = asset.to_json();
    }
    return output;
  }
  TerminalCall call;
  call.command = command;
  call.contents = contents;
  call.truncation = config.truncation;
  return terminal_execute(config.terminal, call, control);
}

} // namespace pb::tool_services
