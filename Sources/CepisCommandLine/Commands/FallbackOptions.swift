import Cepis
import Foundation

/// `cepis lookup --fallback LIST [--hedge-after SECONDS]`, and `CEPIS_FALLBACK`.
///
/// LIST is comma-separated provider names, in the order they are asked: `viacep`,
/// `brasilapi` (case does not matter). `NAME=URL` points one at another address (a proxy, or
/// `cepis mock`, which serves both providers' routes on its own port); `none` asks no
/// fallback, overriding the environment.
enum FallbackOptions {
  /// The names `--fallback` accepts, with the fallback each makes from a base URL.
  static let providers: [(name: String, make: @Sendable (URL?) -> Fallback)] = [
    ("viacep", { url in url.map { Fallback.viaCEP(baseURL: $0) } ?? .viaCEP() }),
    ("brasilapi", { url in url.map { Fallback.brasilAPI(baseURL: $0) } ?? .brasilAPI() }),
  ]

  /// The fallbacks `--fallback` (every occurrence, in order) or else `CEPIS_FALLBACK` asks
  /// for; empty for none.
  static func fallbacks(_ context: Context) throws(UsageError) -> [Fallback] {
    let given = context.parsed.options["fallback"]
    let list: String
    let origin: String
    if let given {
      list = given.joined(separator: ",")
      origin = "option '--fallback'"
    } else if let env = context.environment["CEPIS_FALLBACK"], !env.isEmpty {
      list = env
      origin = "CEPIS_FALLBACK"
    } else {
      return []
    }
    return try parse(list, origin: origin, path: context.path)
  }

  /// Parses a LIST; `origin` names where it came from in error messages.
  static func parse(_ list: String, origin: String, path: [String]) throws(UsageError)
    -> [Fallback]
  {
    func fail(_ message: String) -> UsageError {
      UsageError(message: "\(origin): \(message)", path: path)
    }
    var result: [Fallback] = []
    var seen = Set<String>()
    for rawItem in list.split(separator: ",", omittingEmptySubsequences: false) {
      let item = rawItem.trimmingCharacters(in: .whitespaces)
      let name: String
      var url: URL?
      if let equals = item.firstIndex(of: "=") {
        name = item[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
        let text = item[item.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard let parsed = URL(string: text), let scheme = parsed.scheme?.lowercased(),
          scheme == "http" || scheme == "https", parsed.host != nil
        else {
          throw fail("invalid URL '\(text)' for \(name) (expected http://host[:port] or https://…)")
        }
        url = parsed
      } else {
        name = item.lowercased()
      }
      if name == "none" && url == nil {
        continue
      }
      guard let provider = providers.first(where: { $0.name == name }) else {
        let names = providers.map(\.name)
        var message =
          name.isEmpty
          ? "empty provider name in '\(list)'"
          : "unknown provider '\(name)' (expected \(names.joined(separator: ", ")) or none)"
        if !name.isEmpty, let guess = suggestion(for: name, among: names) {
          message += "; did you mean '\(guess)'?"
        }
        throw fail(message)
      }
      guard seen.insert(name).inserted else { throw fail("\(name) is listed twice") }
      result.append(provider.make(url))
    }
    return result
  }

  /// `--hedge-after SECONDS` (0 or more); only with fallbacks.
  static func hedgeAfter(_ context: Context, fallbacks: [Fallback]) throws(UsageError)
    -> TimeInterval?
  {
    guard let text = context.parsed.value("hedge-after") else { return nil }
    guard let value = Double(text), value.isFinite, value >= 0 else {
      throw UsageError(
        message: "option '--hedge-after' needs a number of seconds, 0 or more, not '\(text)'",
        path: context.path)
    }
    guard !fallbacks.isEmpty else {
      throw UsageError(
        message: "option '--hedge-after' needs fallbacks (--fallback or CEPIS_FALLBACK)",
        path: context.path)
    }
    return value
  }
}
