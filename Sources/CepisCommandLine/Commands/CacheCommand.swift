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
enum CacheOptions {
  /// The options `lookup`, `batch`, `enrich` and `cache` take.
  static let specs: [OptionSpec] = [
    .value(
      "cache", "PATH",
      "the address cache file, or a folder for it (env CEPIS_CACHE; default: "
        + "$XDG_CACHE_HOME/cepis, else ~/.cache/cepis)"),
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

  /// The cache file the options and the environment name, or `nil` for no cache.
  static func location(_ context: Context, baseURL: URL) throws(UsageError) -> URL? {
    if context.parsed.flag("no-cache") { return nil }
    let given =
      context.parsed.value("cache")
      ?? context.environment["CEPIS_CACHE"].flatMap { $0.isEmpty ? nil : $0 }
    if let given {
      if ["off", "none", "no", "0", "false"].contains(given.lowercased()) { return nil }
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
    guard let folder = defaultFolder(context.environment) else { return nil }
    return folder.appendingPathComponent(fileName(for: baseURL))
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
    guard let url = try location(context, baseURL: baseURL) else { return nil }
    let console = context.console
    return .sqlite(at: url) { warning in console.note("warning: address cache: \(warning)") }
  }
}

/// `cepis cache info` and `cepis cache clear`.
enum CacheCommand {
  static func info(_ context: Context) async throws -> ToolStatus {
    let format = try context.format()
    let baseURL = try context.baseURL()
    guard let url = try CacheOptions.location(context, baseURL: baseURL) else {
      context.console.note("the address cache is off (--no-cache or CEPIS_CACHE=off)")
      return .success
    }
    let exists = FileManager.default.fileExists(atPath: url.path)
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
        "path": .string(url.path), "exists": .bool(exists),
        "bytes": .int(statistics?.bytes ?? 0),
        "entries": .int(editions.reduce(0) { $0 + $1.value }),
        "editions": .object(editions.map { ($0.key, .int($0.value)) }),
        "last_edition": .optional(mark?.edition), "last_checked": .optional(checked),
      ]
      context.console.out(value.rendered + "\n")
    case .text, .csv:
      var text = "path: \(url.path)\n"
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
    guard let url = try CacheOptions.location(context, baseURL: baseURL) else {
      context.console.note("the address cache is off (--no-cache or CEPIS_CACHE=off)")
      return .success
    }
    guard FileManager.default.fileExists(atPath: url.path) else {
      context.console.note("nothing to clear at \(url.path)")
      return .success
    }
    let cache = try CacheOptions.cache(context, baseURL: baseURL)
    let cleared = await cache?.clear() ?? false
    await cache?.close()
    guard cleared else {
      context.console.error("could not clear \(url.path)")
      return .failure
    }
    context.console.note("cleared \(url.path)")
    return .success
  }
}
