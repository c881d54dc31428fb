import Cepis
import CepisSupport
import Foundation

/// The address cache of `lookup`, `batch` and `enrich`, and `cepis cache info|clear`.
///
/// On by default, in a SQLite file at `$XDG_CACHE_HOME/cepis/` (else `~/.cache/cepis/`;
/// `~/Library/Caches/cepis/` on macOS). `--cache PATH` or `CEPIS_CACHE` names the file (or a
/// folder to keep it in); `--no-cache`, or `CEPIS_CACHE=off`, turns it off. Answers of a
/// server other than cep.is (`--base-url`) go to a file of their own in the default folder,
/// so that a mock's or a proxy's data never answers for cep.is's.
///
/// `--cache redis://[user:pass@]host:port[/db]` (also `valkey://`, and `rediss://` over TLS)
/// keeps the cache in a Valkey or Redis server shared by a fleet (builds with the `Valkey`
/// trait); another server's answers go under a key prefix of their own there too.
enum CacheOptions {
  /// Where the cache is: a file, or a server.
  enum Location: Equatable {
    /// A SQLite file.
    case file(URL)
    /// A Valkey or Redis server (`redis://`, `valkey://`, `rediss://`), and the key prefix.
    case server(URL, keyPrefix: String)
  }

  /// The URL schemes of a cache server.
  static let serverSchemes: Set<String> = ["redis", "valkey", "rediss", "valkeys"]

  /// The key prefix of a server cache: `cepis:` for cep.is's answers, one of its own for
  /// another server's (host and port).
  static func keyPrefix(for baseURL: URL) -> String {
    guard baseURL != Client.defaultBaseURL else { return "cepis:" }
    let host = (baseURL.host ?? "server").map { $0.isLetter || $0.isNumber || $0 == "." ? $0 : "_" }
    let port = baseURL.port.map { "-\($0)" } ?? ""
    return "cepis-\(String(host))\(port):"
  }

  /// `url` as it may be shown: without its password.
  static func displayed(_ url: URL) -> String {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
      return "(a cache server)"
    }
    components.password = nil
    return components.string ?? "(a cache server)"
  }

  /// The options `lookup`, `batch`, `enrich` and `cache` take.
  static let specs: [OptionSpec] = [
    .value(
      "cache", "PATH|URL",
      "the address cache file, or a folder for it, or a Valkey/Redis server "
        + "(redis://[user:pass@]host:port[/db], rediss:// for TLS; the Valkey trait) "
        + "(env CEPIS_CACHE; default: $XDG_CACHE_HOME/cepis, else ~/.cache/cepis)"),
    .flag("no-cache", "ask the network for everything; keep nothing (CEPIS_CACHE=off too)"),
  ]

  /// The file's name in a folder.
  static func fileName(for baseURL: URL) -> String {
    guard baseURL != Client.defaultBaseURL else { return "addresses.sqlite" }
    // Another server's answers in a file of their own: host and port, nothing else of the URL.
    let host = (baseURL.host ?? "server").map { $0.isLetter || $0.isNumber || $0 == "." ? $0 : "_" }
    let port = baseURL.port.map { "-\($0)" } ?? ""
    return "addresses-\(String(host))\(port).sqlite"
  }

  /// The cache the options and the environment name, or `nil` for no cache.
  static func location(_ context: Context, baseURL: URL) throws(UsageError) -> Location? {
    if context.parsed.flag("no-cache") { return nil }
    let given =
      context.parsed.value("cache")
      ?? context.environment["CEPIS_CACHE"].flatMap { $0.isEmpty ? nil : $0 }
    if let given {
      if ["off", "none", "no", "0", "false"].contains(given.lowercased()) { return nil }
      if let scheme = given.split(separator: ":", maxSplits: 1).first?.lowercased(),
        serverSchemes.contains(scheme), given.contains("://")
      {
        guard let url = URL(string: given), url.host?.isEmpty == false else {
          throw UsageError(
            message: "--cache: not a server URL (\(scheme)://[user:pass@]host:port[/db])",
            path: context.path)
        }
        return .server(url, keyPrefix: keyPrefix(for: baseURL))
      }
      return .file(fileLocation(given, baseURL: baseURL))
    }
    guard let folder = defaultFolder(context.environment) else { return nil }
    return .file(folder.appendingPathComponent(fileName(for: baseURL)))
  }

  /// The file `given` names: itself, or the file for `baseURL` in it when it is a folder.
  private static func fileLocation(_ given: String, baseURL: URL) -> URL {
    let url = URL(fileURLWithPath: given)
    var isFolder: ObjCBool = false
    if given.hasSuffix("/")
      || (FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder)
        && isFolder.boolValue)
    {
      return url.appendingPathComponent(fileName(for: baseURL))
    }
    return url
  }

  /// `$XDG_CACHE_HOME/cepis` (an absolute path only, as the XDG spec says), else
  /// `~/.cache/cepis` (`~/Library/Caches/cepis` on macOS); `nil` without a home.
  static func defaultFolder(_ environment: [String: String]) -> URL? {
    #if canImport(Darwin)
      if let home = environment["HOME"], !home.isEmpty {
        return URL(fileURLWithPath: home).appendingPathComponent("Library/Caches/cepis")
      }
      return nil
    #else
      if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
        return URL(fileURLWithPath: xdg).appendingPathComponent("cepis")
      }
      if let home = environment["HOME"], !home.isEmpty {
        return URL(fileURLWithPath: home).appendingPathComponent(".cache/cepis")
      }
      return nil
    #endif
  }

  /// The cache the options describe; its warnings go to stderr even with `--quiet`.
  static func cache(_ context: Context, baseURL: URL) throws(UsageError) -> AddressCache? {
    guard let location = try location(context, baseURL: baseURL) else { return nil }
    let console = context.console
    let warn: @Sendable (String) -> Void = { console.note("warning: address cache: \($0)") }
    switch location {
    case .file(let url):
      return .sqlite(at: url, onWarning: warn)
    case .server(let url, let prefix):
      return try CacheServer.cache(url, keyPrefix: prefix, context: context, onWarning: warn)
    }
  }
}

/// `cepis cache info` and `cepis cache clear`.
enum CacheCommand {
  static func info(_ context: Context) async throws -> ToolStatus {
    let format = try context.format()
    let baseURL = try context.baseURL()
    guard let location = try CacheOptions.location(context, baseURL: baseURL) else {
      context.console.note("the address cache is off (--no-cache or CEPIS_CACHE=off)")
      return .success
    }
    let shown: String
    let exists: Bool
    switch location {
    case .file(let url):
      shown = url.path
      exists = FileManager.default.fileExists(atPath: url.path)
    case .server(let url, let prefix):
      shown = "\(CacheOptions.displayed(url)) (keys \(prefix)*)"
      exists = true
    }
    var statistics: CacheStatistics?
    if exists {
      let cache = try CacheOptions.cache(context, baseURL: baseURL)
      statistics = await cache?.statistics()
      await cache?.close()
    }
    let editions = (statistics?.entriesPerEdition ?? [:]).sorted { $0.key > $1.key }
    let mark = statistics?.edition
    let checked = mark.map { ISO8601DateFormatter().string(from: $0.checkedAt) }
    switch format {
    case .json, .ndjson:
      let value: JSONValue = [
        "path": .string(shown), "exists": .bool(exists),
        "bytes": .int(statistics?.bytes ?? 0),
        "entries": .int(editions.reduce(0) { $0 + $1.value }),
        "editions": .object(editions.map { ($0.key, .int($0.value)) }),
        "last_edition": .optional(mark?.edition), "last_checked": .optional(checked),
      ]
      context.console.out(value.rendered + "\n")
    case .text, .csv:
      var text = "path: \(shown)\n"
      guard exists else {
        context.console.out(text + "empty: nothing cached yet\n")
        return .success
      }
      text += "size: \(statistics?.bytes ?? 0) bytes\n"
      text += "entries: \(editions.reduce(0) { $0 + $1.value })\n"
      for (edition, count) in editions { text += "  DNE \(edition): \(count)\n" }
      if let mark, let checked {
        text += "last edition seen: \(mark.edition), at \(checked)\n"
      }
      context.console.out(text)
    }
    return statistics == nil && exists ? .failure : .success
  }

  static func clear(_ context: Context) async throws -> ToolStatus {
    let baseURL = try context.baseURL()
    guard let location = try CacheOptions.location(context, baseURL: baseURL) else {
      context.console.note("the address cache is off (--no-cache or CEPIS_CACHE=off)")
      return .success
    }
    let shown: String
    switch location {
    case .file(let url):
      shown = url.path
      guard FileManager.default.fileExists(atPath: url.path) else {
        context.console.note("nothing to clear at \(url.path)")
        return .success
      }
    case .server(let url, let prefix):
      shown = "\(CacheOptions.displayed(url)) (keys \(prefix)*)"
    }
    let cache = try CacheOptions.cache(context, baseURL: baseURL)
    let cleared = await cache?.clear() ?? false
    await cache?.close()
    guard cleared else {
      context.console.error("could not clear \(shown)")
      return .failure
    }
    context.console.note("cleared \(shown)")
    return .success
  }
}
