import CepisMock
import CepisSupport
import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// `cepis mock`: runs CepisMock in the foreground until SIGINT or SIGTERM.
enum MockCommand {
  static func run(_ context: Context) async throws -> ToolStatus {
    let path = context.path
    let console = context.console
    var configuration = MockServer.Configuration()
    if let port = try context.integer("port", range: 0...65_535) {
      configuration.port = port
    }
    if let file = context.parsed.value("data") {
      do {
        configuration.dataset = try MockDataset.load(contentsOf: URL(fileURLWithPath: file))
      } catch {
        console.error("cannot load dataset '\(file)': \(error)")
        return .failure
      }
    }
    if let chaos = context.parsed.value("chaos") {
      configuration.chaos = try parseChaos(chaos, path: path)
    }
    if let keys = context.parsed.options["cpf-key"] {
      configuration.cpfAPIKeys = Set(keys)
    }
    configuration.rateLimits = try parseRateLimits(
      context.parsed.options["rate-limit"] ?? [], path: path)
    #if !AsyncHTTPClient
      if context.parsed.flag("tls") {
        throw UsageError(
          message: "--tls needs a cepis built with --traits AsyncHTTPClient", path: path)
      }
    #endif
    let server = MockServer(configuration: configuration)
    do {
      try await server.start()
    } catch {
      console.error("cannot start the mock server: \(error)")
      return .failure
    }
    let signals = SignalWaiter(signals: [SIGINT, SIGTERM])
    #if AsyncHTTPClient
      let front: MockTLSFront?
      do {
        front = context.parsed.flag("tls") ? try await MockTLSFront.start(server) : nil
      } catch {
        console.error("cannot start the TLS front: \(error)")
        await server.stop()
        return .failure
      }
      if let front {
        console.out("\(front.relay.baseURL.absoluteString)\n\(front.certificate.path)\n")
      } else {
        console.out(server.baseURL.absoluteString + "\n")
      }
    #else
      console.out(server.baseURL.absoluteString + "\n")
    #endif
    console.flush()
    let received = await signals.wait()
    signals.cancel()
    #if AsyncHTTPClient
      await front?.stop()
    #endif
    await server.stop()
    console.note("mock server stopped (signal \(received))")
    return .success
  }

  /// `SEED:RATE`, as in `7:0.3`.
  static func parseChaos(_ text: String, path: [String]) throws(UsageError) -> MockChaos {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, let seed = UInt64(parts[0]), let rate = Double(String(parts[1])),
      rate >= 0, rate <= 1
    else {
      throw UsageError(
        message:
          "option '--chaos' needs SEED:RATE with RATE from 0 to 1, as in 7:0.3, not '\(text)'",
        path: path)
    }
    return MockChaos(seed: seed, rate: rate)
  }

  /// The `--rate-limit` values, `ROUTE=LIMIT` each (`csv=5/s,burst=5`,
  /// `viacep=block,after=550,within=7200,for=3600`). Two values for one route combine: a rate
  /// and a block both apply; a later rate (or block) replaces an earlier one.
  static func parseRateLimits(
    _ texts: [String], path: [String]
  ) throws(UsageError) -> [MockRoute: MockRateLimit] {
    var limits: [MockRoute: MockRateLimit] = [:]
    for text in texts {
      let parsed: (route: MockRoute, limit: MockRateLimit)
      do {
        parsed = try MockRateLimit.parse(routed: text)
      } catch {
        throw UsageError(
          message: "option '--rate-limit' got '\(text)': \(error.description); use "
            + "ROUTE=RATE[,burst=N][,retry-after=SECONDS|date] or "
            + "ROUTE=block,after=N,within=DURATION,for=DURATION, as in csv=5/s,burst=5",
          path: path)
      }
      limits[parsed.route] = (limits[parsed.route] ?? MockRateLimit()).combined(with: parsed.limit)
    }
    return limits
  }
}

/// Turns signals into events with DispatchSource: the default action is ignored while the
/// waiter lives, so the process is not killed and can clean up.
///
/// `@unchecked Sendable` is sound: `sources` is written only in `init` (before the value is
/// shared) and `cancel()`; everything else that changes lives in `state`, a ``LockedValue``
/// (the package's lock type).
final class SignalWaiter: @unchecked Sendable {
  private struct State {
    var continuation: CheckedContinuation<Int32, Never>?
    var pending: Int32?
    var count = 0
  }

  private let state = LockedValue(State())
  private var sources: [DispatchSourceSignal] = []
  private let queue = DispatchQueue(label: "cepis.signals")
  private let signals: [Int32]
  /// Called on every signal with how many had arrived before it (runs on a private queue).
  private let onSignal: (@Sendable (Int32, Int) -> Void)?

  init(signals: [Int32], onSignal: (@Sendable (Int32, Int) -> Void)? = nil) {
    self.signals = signals
    self.onSignal = onSignal
    for number in signals {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { [weak self] in self?.deliver(number) }
      source.resume()
      sources.append(source)
    }
  }

  private func deliver(_ number: Int32) {
    let (before, waiting) = state.withLock { state in
      let before = state.count
      state.count += 1
      let waiting = state.continuation
      state.continuation = nil
      if waiting == nil && state.pending == nil { state.pending = number }
      return (before, waiting)
    }
    onSignal?(number, before)
    waiting?.resume(returning: number)
  }

  /// Waits for the first signal (returns at once if one already came).
  func wait() async -> Int32 {
    await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
      let pending = state.withLock { state -> Int32? in
        if let pending = state.pending { return pending }
        state.continuation = continuation
        return nil
      }
      if let pending { continuation.resume(returning: pending) }
    }
  }

  /// Stops listening and restores the default actions.
  func cancel() {
    for source in sources { source.cancel() }
    sources.removeAll()
    for number in signals { signal(number, SIG_DFL) }
  }
}

#if AsyncHTTPClient
  /// `cepis mock --tls`: a TLS relay in front of the server, with a certificate from an
  /// authority made now, whose certificate (never its key) is written to a temporary file.
  struct MockTLSFront {
    let relay: MockTLSRelay
    let certificate: URL

    static func start(_ server: MockServer) async throws -> MockTLSFront {
      let authority = try MockCertificateAuthority()
      let certificate = try authority.writeCertificate()
      let relay = try await MockTLSRelay.start(
        forwardingTo: server.port, serving: try authority.issue(.valid))
      return MockTLSFront(relay: relay, certificate: certificate)
    }

    func stop() async {
      await relay.stop()
      try? FileManager.default.removeItem(at: certificate)
    }
  }
#endif
