import BrazilianDocuments
import Cepis
import CepisHTTP
import Foundation

/// The `cepis` command-line tool: parses arguments, runs a command, returns its exit status.
///
/// ```swift
/// exit(await CepisTool.main(Array(CommandLine.arguments.dropFirst())))
/// ```
public enum CepisTool {
  /// What the build reports its clients' events to, for `--version`.
  #if Observability
    static let observability = "swift-log, swift-metrics, swift-distributed-tracing; --verbose"
  #else
    static let observability = "--verbose"
  #endif

  /// The tool's version, the same as the library's.
  public static let version = Client.version

  /// Runs the tool with `arguments` (without the program name) on the process's standard
  /// streams and returns the exit status: 0 all good, 1 something not found or invalid,
  /// 2 usage error, 3 the API unreachable or failing, 130 interrupted.
  public static func main(
    _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
  ) async -> Int32 {
    let console = Console(environment: environment)
    let status = await run(arguments, environment: environment, console: console)
    console.flush()
    return status.rawValue
  }

  /// Runs the tool against a given console (tests capture its output).
  static func run(
    _ arguments: [String], environment: [String: String], console: Console
  ) async -> ToolStatus {
    let outcome: ParseOutcome
    do {
      outcome = try Commands.parser.parse(arguments)
    } catch {
      return usage(error, console: console)
    }
    switch outcome {
    case .version:
      let transports = Transport.availableKinds.map(\.rawValue).joined(separator: ", ")
      console.out(
        "cepis \(version)\ntransports: \(transports) (default \(Transport.default))\n"
          + "observability: \(Self.observability)\n")
      return .success
    case .help(let path):
      console.out(Commands.help(for: path))
      return .success
    case .run(let parsed):
      let context = Context(parsed: parsed, environment: environment, console: console)
      do {
        let status = try await dispatch(context)
        if console.sawNetworkFailure && parsed.path != ["mock"] {
          console.note(offlineHint)
        }
        return status
      } catch let error as UsageError {
        return usage(error, console: console)
      } catch {
        console.error("\(error)")
        return .failure
      }
    }
  }

  /// The one line added when an API could not be reached: the way to work without internet.
  static let offlineHint =
    "hint: no internet? 'cepis mock' serves sample data offline; run it, then pass the URL it "
    + "prints as --base-url (or CEPIS_BASE_URL)"

  static func usage(_ error: UsageError, console: Console) -> ToolStatus {
    console.error(error.message)
    console.err("Try '\(Commands.parser.display(error.path)) --help' for more information.\n")
    return .usage
  }

  static func dispatch(_ context: Context) async throws -> ToolStatus {
    switch context.parsed.path {
    case ["lookup"]: return try await LookupCommand.run(context)
    case ["batch"]: return try await BatchCommand.run(context)
    case ["enrich"]: return try await EnrichCommand.run(context)
    case ["health"]: return try await HealthCommand.run(context)
    case ["uf"]: return try UFCommand.run(context)
    case ["cpf", "validate"]: return try DocumentCommands.validateCPF(context)
    case ["cnpj", "validate"]: return try DocumentCommands.validateCNPJ(context)
    case ["cpf", "lookup"]: return try await CPFLookupCommand.run(context)
    case ["mock"]: return try await MockCommand.run(context)
    case ["cache", "info"]: return try await CacheCommand.info(context)
    case ["cache", "clear"]: return try await CacheCommand.clear(context)
    default:
      throw UsageError(message: "unknown command", path: [])
    }
  }
}

/// The tool's exit statuses.
enum ToolStatus: Int32, Sendable, Comparable {
  /// All good.
  case success = 0
  /// Something was not found or invalid; the rest was still printed.
  case failure = 1
  /// A usage error.
  case usage = 2
  /// The API could not be reached or kept failing after retries.
  case unavailable = 3
  /// Interrupted by SIGINT.
  case interrupted = 130

  static func < (lhs: ToolStatus, rhs: ToolStatus) -> Bool { lhs.rawValue < rhs.rawValue }

  /// The status of a run in which these results were seen (3 beats 1 beats 0).
  static func of(_ statuses: some Sequence<CEPStatus>) -> ToolStatus {
    var worst = ToolStatus.success
    for status in statuses {
      switch status {
      case .ok: continue
      case .notFound, .invalid: worst = max(worst, .failure)
      case .error(let kind):
        worst = max(worst, kind == "invalid_cep" ? .failure : .unavailable)
      }
    }
    return worst
  }
}

/// Everything a command needs.
struct Context: Sendable {
  var parsed: ParsedArguments
  var environment: [String: String]
  var console: Console

  var path: [String] { parsed.path }

  /// `--format`.
  func format() throws(UsageError) -> OutputFormat {
    try OutputFormat.parse(parsed.value("format"), path: path)
  }

  /// A number option, or a usage error naming it.
  func number(_ name: String) throws(UsageError) -> Double? {
    guard let text = parsed.value(name) else { return nil }
    guard let value = Double(text), value.isFinite, value > 0 else {
      throw UsageError(
        message: "option '--\(name)' needs a positive number, not '\(text)'", path: path)
    }
    return value
  }

  /// An integer option, or a usage error naming it.
  func integer(_ name: String, range: ClosedRange<Int>) throws(UsageError) -> Int? {
    guard let text = parsed.value(name) else { return nil }
    guard let value = Int(text), range.contains(value) else {
      throw UsageError(
        message:
          "option '--\(name)' needs a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'",
        path: path)
    }
    return value
  }

  /// The API client the global options describe, with `fallbacks` and `hedgeAfter` (only
  /// `lookup` has them), and the address cache when `cached` (see ``CacheOptions``).
  func client(
    fallbacks: [Fallback] = [], hedgeAfter: TimeInterval? = nil, cached: Bool = false
  ) throws(UsageError) -> Client {
    let baseURL = try baseURL()
    let timeout = try number("timeout") ?? 10
    let attempts = try integer("attempts", range: 1...100) ?? 3
    let total = try number("total-timeout")
    return Client(
      baseURL: baseURL, timeout: timeout, maxAttempts: attempts, totalTimeout: total,
      userAgent: "cepis-cli/\(CepisTool.version) (+https://cep.is)", transport: try transport(),
      fallbacks: fallbacks, hedgeAfter: hedgeAfter,
      cache: cached ? try CacheOptions.cache(self, baseURL: baseURL) : nil,
      rateLimit: try rateLimit()
    ).observed(by: try eventLog(default: Client.defaultObserver))
  }

  /// The log `--verbose` or `--log-level` asks for; `fallback` (the build's own observer)
  /// when neither is given.
  func eventLog(
    default fallback: (any ClientEventObserver)?
  ) throws(UsageError) -> (any ClientEventObserver)? {
    if let level = parsed.value("log-level") {
      guard EventLog.levelNames.contains(level.lowercased()) else {
        throw UsageError(
          message: "option '--log-level' needs one of "
            + "\(EventLog.levelNames.joined(separator: ", ")), not '\(level)'",
          path: path)
      }
      return EventLog(console: console, level: level.lowercased())
    }
    if parsed.flag("verbose") { return EventLog(console: console, level: "debug") }
    return fallback
  }

  /// `--rate` (env `CEPIS_RATE`): `N/s`, `N/min`, or `N` (a second); `nil` when not given.
  func rateLimit() throws(UsageError) -> RateLimit? {
    guard
      let text = parsed.value("rate")
        ?? environment["CEPIS_RATE"].flatMap({ $0.isEmpty ? nil : $0 })
    else { return nil }
    guard let limit = Self.parseRate(text) else {
      throw UsageError(
        message: "option '--rate' needs a rate such as 5/s or 300/min, not '\(text)'", path: path)
    }
    return limit
  }

  /// `5/s`, `2.5/s`, `300/min` or `5`; `nil` for anything else, or a rate that is not above 0.
  static func parseRate(_ text: String) -> RateLimit? {
    let parts = text.trimmingCharacters(in: .whitespaces).lowercased()
      .split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count <= 2, let count = Double(String(parts[0])), count.isFinite, count > 0
    else { return nil }
    switch parts.count == 2 ? String(parts[1]) : "s" {
    case "s", "sec", "second": return .perSecond(count)
    case "m", "min", "minute": return .perMinute(count)
    default: return nil
    }
  }

  /// `--base-url` (env `CEPIS_BASE_URL`), or cep.is.
  func baseURL() throws(UsageError) -> URL {
    guard
      let text = parsed.value("base-url")
        ?? environment["CEPIS_BASE_URL"].flatMap({ $0.isEmpty ? nil : $0 })
    else { return Client.defaultBaseURL }
    guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
      scheme == "http" || scheme == "https", url.host != nil
    else {
      throw UsageError(
        message: "invalid base URL '\(text)' (expected http://host[:port] or https://…)",
        path: path)
    }
    return url
  }

  /// `--transport` (env `CEPIS_TRANSPORT`), or the build's default; through `--proxy` when
  /// given (the environment's proxies otherwise, which every transport reads).
  /// With `--cacert` (env `CEPIS_CA_BUNDLE`), a transport of its own that trusts that bundle
  /// too.
  func transport() throws(UsageError) -> Transport {
    let kind = try transportKind()
    if let bundle = try caBundle() {
      let chosen = kind ?? Transport.availableKinds[0]
      let proxy = try proxyURL()
      if let proxy { exportForLibcurl(proxy, transport: chosen.rawValue) }
      return try transport(chosen, proxy: proxy, trusting: bundle)
    }
    guard let proxy = try proxyURL() else {
      guard let kind else { return .default }
      return Transport.make(kind) ?? .default
    }
    let chosen = kind ?? Transport.availableKinds[0]
    exportForLibcurl(proxy, transport: chosen.rawValue)
    return Transport.make(chosen, proxy: proxy) ?? .default
  }

  /// `--proxy` as a URL (`http://` added when it names no scheme, as curl does), or `nil`; a
  /// usage error for anything but an `http://` proxy.
  func proxyURL() throws(UsageError) -> URL? {
    guard let text = parsed.value("proxy") else { return nil }
    let full = text.contains("://") ? text : "http://" + text
    guard let url = URL(string: full), url.scheme?.lowercased() == "http",
      let host = url.host, !host.isEmpty
    else {
      throw UsageError(
        message: "invalid proxy '\(text)' (expected an HTTP proxy: http://host[:port])",
        path: path)
    }
    return url
  }

  /// Puts `--proxy` where URLSession on Linux looks for it.
  ///
  /// FoundationNetworking never applies a session's `connectionProxyDictionary`; libcurl, under
  /// it, reads `http_proxy` and `https_proxy` from the process environment, and Cepis's
  /// URLSession transport refuses a request libcurl would route otherwise than asked. So the
  /// tool — a process of its own, before its first request and before any thread reads the
  /// environment — sets both, as `curl --proxy` would mean them (`no_proxy` still applies).
  func exportForLibcurl(_ proxy: URL, transport: String) {
    #if canImport(FoundationNetworking)
      guard transport == "urlsession" else { return }
      setenv("http_proxy", proxy.absoluteString, 1)
      setenv("https_proxy", proxy.absoluteString, 1)
    #endif
  }

  /// The transport `--transport` or `CEPIS_TRANSPORT` names, `nil` for the build's default; a
  /// usage error for an unknown name or one this build lacks.
  func transportKind() throws(UsageError) -> Transport.Kind? {
    guard
      let name = parsed.value("transport")
        ?? environment["CEPIS_TRANSPORT"].flatMap({ $0.isEmpty ? nil : $0 })
    else { return nil }
    guard let kind = Transport.Kind(rawValue: name) else {
      throw UsageError(
        message: "unknown transport '\(name)' (expected urlsession or async-http-client)",
        path: path)
    }
    guard Transport.availableKinds.contains(kind) else {
      throw UsageError(
        message:
          "this cepis was built without the \(name) transport (build it with --traits AsyncHTTPClient)",
        path: path)
    }
    return kind
  }

}
