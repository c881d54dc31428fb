import Foundation

/// A real HTTP/1.1 server on 127.0.0.1 that speaks the cep.is and cpfhub.io protocols and
/// misbehaves on demand.
///
/// ```swift
/// let server = try await MockServer.start()
/// defer { Task { await server.stop() } }
/// server.script(.cep, [.status(503), .status(503)])
/// // point the client at server.baseURL …
/// ```
///
/// Each connection is served by its own thread; ``stop()`` closes the listener and every open
/// connection and joins every thread it started, so test suites can start hundreds of servers
/// without leaking descriptors or threads.
///
/// Routes are matched on the last path components, so any prefix is accepted:
/// `/01001000`, `/api/01001000`, `/csv`, `/api/csv`, `/health`, `/cpf/{cpf}`, `/v1/cpf/{cpf}`,
/// and the fallback providers' `/ws/{cep}/json/` (ViaCEP) and `/api/cep/v2/{cep}` (BrasilAPI),
/// all on the same port: a client's fallback base URL is ``baseURL`` too.
/// The control endpoints live under `/__mock/` (see <doc:CepisMock>).
///
/// The server is the surface users call; the work is done by the internal parts it holds: a
/// connection engine (the listener, the connections and their threads, the answers on the
/// wire) and a request ledger (scripts, modes, rate limits, the `/health` flags, the log and
/// the counters).
public final class MockServer: Sendable {
  /// How a ``MockServer`` is set up.
  public struct Configuration: Sendable {
    /// The port to bind on 127.0.0.1; 0 (the default) picks a free one.
    public var port: Int
    /// The addresses and people served.
    public var dataset: MockDataset
    /// The accepted `x-api-key` values of the cpfhub.io routes.
    public var cpfAPIKeys: Set<String>
    /// Random fault injection, or `nil` for none.
    public var chaos: MockChaos?
    /// Whether `/health` starts out degraded (503).
    public var degraded: Bool
    /// The most connections served at once; more are answered 503 and closed.
    public var maxConnections: Int
    /// How long an idle keep-alive connection (or a half-sent request) is kept, in seconds.
    public var idleTimeout: TimeInterval
    /// The most body bytes ``MockFault/dribble(gap:)`` sends one at a time.
    public var maxDribbleBytes: Int
    /// The most request records kept by ``MockServer/requests`` (the oldest are dropped).
    public var maxLogEntries: Int
    /// The request parser's limits.
    public var parserLimits: MockHTTPRequest.Limits
    /// The DNE edition `/health` names at first (`dne`).
    public var edition: String
    /// The most bytes of `/csv` answers kept to be sent again as they are, or 0 (the default)
    /// to build every answer.
    ///
    /// For benchmarks on a machine whose cores the client under test shares with the mock: a
    /// `/csv` answer that no fault alters is kept by its query string, and a request with the
    /// same query gets the same bytes without the server parsing the list or building the rows
    /// again, so the server's work no longer takes the client's cores (as cep.is's does not).
    /// Answers past the budget are built each time. The dataset never changes while a server
    /// runs, so a kept answer is always the one that would be built.
    public var keptCSVAnswerBytes: Int
    /// The rate limits the server starts with, by route (empty by default), and that
    /// ``MockServer/reset()`` restores; ``MockServer/limitRate(_:_:)`` changes them while it
    /// runs.
    public var rateLimits: [MockRoute: MockRateLimit]

    /// Creates a configuration.
    public init(
      port: Int = 0, dataset: MockDataset = .sample, cpfAPIKeys: Set<String> = ["test-key"],
      chaos: MockChaos? = nil, degraded: Bool = false, maxConnections: Int = 256,
      idleTimeout: TimeInterval = 15, maxDribbleBytes: Int = 1_024, maxLogEntries: Int = 100_000,
      parserLimits: MockHTTPRequest.Limits = MockHTTPRequest.Limits(), edition: String = "2026-11",
      keptCSVAnswerBytes: Int = 0, rateLimits: [MockRoute: MockRateLimit] = [:]
    ) {
      self.port = port
      self.dataset = dataset
      self.cpfAPIKeys = cpfAPIKeys
      self.chaos = chaos
      self.degraded = degraded
      self.maxConnections = maxConnections
      self.idleTimeout = idleTimeout
      self.maxDribbleBytes = maxDribbleBytes
      self.maxLogEntries = maxLogEntries
      self.parserLimits = parserLimits
      self.edition = edition
      self.keptCSVAnswerBytes = keptCSVAnswerBytes
      self.rateLimits = rateLimits
    }
  }

  /// The listener, the connections and their threads.
  let engine: MockConnectionEngine
  /// The scripts, modes, `/health` flags, request log and counters.
  let ledger: RequestLedger

  /// Creates a server; nothing listens until ``start()``.
  public convenience init(configuration: Configuration = Configuration()) {
    self.init(configuration: configuration, clock: monotonicSeconds)
  }

  /// Creates a server whose rate limits read `clock` (monotonic seconds): tests drive them
  /// without sleeping.
  init(configuration: Configuration, clock: @escaping @Sendable () -> Double) {
    ledger = RequestLedger(configuration: configuration, clock: clock)
    engine = MockConnectionEngine(
      configuration: configuration, ledger: ledger,
      responder: Responder(configuration: configuration))
  }

  deinit {
    engine.stop()
  }

  /// Creates and starts a server.
  public static func start(_ configuration: Configuration = .init()) async throws -> MockServer {
    let server = MockServer(configuration: configuration)
    try await server.start()
    return server
  }

  /// Starts a server, runs `body` with it, and stops it whatever happens: the shape to use in
  /// a test.
  ///
  /// ```swift
  /// try await MockServer.withServer { server in
  ///   server.script(.cep, [.status(503)])
  ///   let address = try await Client(baseURL: server.baseURL).lookup("01001000")
  /// }
  /// ```
  public static func withServer<T>(
    _ configuration: Configuration = .init(),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (MockServer) async throws -> T
  ) async throws -> T {
    let server = try await start(configuration)
    do {
      let result = try await body(server)
      await server.stop()
      return result
    } catch {
      await server.stop()
      throw error
    }
  }

  /// Binds 127.0.0.1 on the configured port and starts serving. Does nothing if already
  /// running; throws ``MockServerError`` if binding fails or the server was stopped.
  public func start() async throws {
    try engine.start()
  }

  /// Closes the listener and every connection, and waits for every server thread to end.
  /// Idempotent.
  public func stop() async {
    let engine = self.engine
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().async {
        engine.stop()
        continuation.resume()
      }
    }
  }

  /// The configuration the server was created with.
  public var configuration: Configuration { engine.configuration }

  /// The bound port (the configured one before ``start()``).
  public var port: Int { engine.port }

  /// `http://127.0.0.1:PORT`, without a trailing slash.
  public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

  /// The data being served: the ground truth to compare answers with.
  public var dataset: MockDataset { engine.configuration.dataset }

  /// Queues faults for a route: each request on the route takes the next one; when the queue
  /// is empty the route behaves normally (or by its mode). Appends to faults already queued.
  public func script(_ route: MockRoute, _ faults: [MockFault]) {
    ledger.script(route, faults)
  }

  /// Sets the persistent faults applied to every request on a route; `[]` clears them.
  public func setMode(_ route: MockRoute, _ faults: [MockFault]) {
    ledger.setMode(route, faults)
  }

  /// Makes `/health` answer 503 `"status":"degraded"` (or healthy again).
  public func setDegraded(_ degraded: Bool) {
    ledger.setDegraded(degraded)
  }

  /// Makes `/health` name another DNE edition (`dne`), as cep.is does when the Correios
  /// publish a new one.
  public func setEdition(_ edition: String) {
    ledger.setEdition(edition)
  }

  /// Every request received (including control requests and ones answered with faults; not
  /// unparsable ones), in arrival order.
  public var requests: [MockRequestRecord] { ledger.log }

  /// Empties ``requests``.
  public func clearLog() {
    ledger.clearLog()
  }

  /// How many faults of each kind were injected (by script, mode or chaos), keyed by
  /// ``MockFault/name``, and how many requests the rate limits refused, keyed `rateLimited`
  /// (429) and `blocked` (403), all routes together (see ``limitRate(_:_:)``). Faults that do
  /// not apply to the route (CSV faults elsewhere) are not counted.
  public var faultCounts: [String: Int] { ledger.faultCounts }

  /// How many requests were received (all routes, control included).
  public var requestCount: Int { ledger.requestCount }

  /// How many connections are open right now.
  public var openConnections: Int { engine.openConnections }

  /// The most requests on `route` the server was answering at once — each from its arrival
  /// until its answer starts to be written, delays included — since the start or the last
  /// ``reset()``: how many requests a client had in flight together.
  public func peakConcurrentRequests(on route: MockRoute) -> Int {
    ledger.peakConcurrentRequests(on: route)
  }

  /// Clears scripts, modes, the log and the counters, restarts the chaos sequence and restores
  /// the configured degraded flag and edition. Rate limits set with ``limitRate(_:_:)`` are
  /// removed and the configured ones (``Configuration/rateLimits``) restored, their buckets
  /// full and their windows empty.
  public func reset() {
    ledger.reset()
  }
}
