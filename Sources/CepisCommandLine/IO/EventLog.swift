import CepisHTTP
import Foundation

/// `--verbose` and `--log-level`: the clients' events, one line each on stderr, on every build
/// (it listens to the library's internal event path; no logging package is needed).
///
/// A line is `cepis: LEVEL: MESSAGE key=value …`, each call's lines carrying its
/// `request_id`. On a terminal a line first clears the progress line, which its next tick
/// draws again.
final class EventLog: ClientEventObserver {
  /// The levels `--log-level` accepts (swift-log's names); the library logs at the first two.
  static let levelNames = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

  private let console: Console
  private let threshold: EventLevel?

  /// A log of the events at `level` or above, written to `console`'s stderr; `level` is one
  /// of ``levelNames`` (above `debug`, nothing the library says is shown).
  init(console: Console, level: String) {
    self.console = console
    switch level {
    case "trace": threshold = .trace
    case "debug": threshold = .debug
    default: threshold = nil
    }
  }

  /// Nothing is written above `debug`: calls then run unobserved.
  var isListening: Bool { threshold != nil }

  func observe<Value>(_ call: CallScope, _ body: () async throws -> Value) async throws -> Value {
    guard let threshold, threshold <= .debug else { return try await body() }
    let started = monotonicSeconds()
    write("call started", call, [("server.address", call.serverAddress)])
    do {
      let value = try await body()
      write("call ended", call, summary(call, since: started) + [("outcome", "success")])
      return value
    } catch {
      let outcome = [("outcome", "failure"), ("error.type", call.errorKind(error))]
      write("call ended", call, summary(call, since: started) + outcome)
      throw error
    }
  }

  func record(_ event: ClientEvent, in call: CallScope) {
    guard let threshold, event.level >= threshold else { return }
    write(event.message, call, event.fields.map { ($0.key, $0.value) }, level: event.level)
  }

  private func summary(_ call: CallScope, since started: Double) -> [(String, String)] {
    let tally = call.summary
    var fields = [
      ("duration_seconds", ClientEvent.seconds(monotonicSeconds() - started)),
      ("attempts", String(tally.attempts)),
    ]
    if let source = tally.source { fields.append(("source", source)) }
    if let cache = tally.cacheResult { fields.append(("cache", cache.rawValue)) }
    return fields
  }

  private func write(
    _ message: String, _ call: CallScope, _ fields: [(String, String)], level: EventLevel = .debug
  ) {
    var line = console.stderrIsTTY ? "\r\u{1B}[K" : ""
    line += "cepis: \(level == .trace ? "trace" : "debug"): \(message)"
    line += " request_id=\(call.requestID) call=\(call.operation.rawValue)"
    for (key, value) in fields { line += " \(key)=\(value)" }
    console.err(line + "\n")
  }
}
