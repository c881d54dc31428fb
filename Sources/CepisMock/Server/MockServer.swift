import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

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

    /// Creates a configuration.
    public init(
      port: Int = 0, dataset: MockDataset = .sample, cpfAPIKeys: Set<String> = ["test-key"],
      chaos: MockChaos? = nil, degraded: Bool = false, maxConnections: Int = 256,
      idleTimeout: TimeInterval = 15, maxDribbleBytes: Int = 1_024, maxLogEntries: Int = 100_000,
      parserLimits: MockHTTPRequest.Limits = MockHTTPRequest.Limits(), edition: String = "2026-11",
      keptCSVAnswerBytes: Int = 0
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
    }
  }

  let core: ServerCore

  /// Creates a server; nothing listens until ``start()``.
  public init(configuration: Configuration = Configuration()) {
    core = ServerCore(configuration: configuration)
  }

  deinit {
    core.stop()
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
    try core.start()
  }

  /// Closes the listener and every connection, and waits for every server thread to end.
  /// Idempotent.
  public func stop() async {
    let core = self.core
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().async {
        core.stop()
        continuation.resume()
      }
    }
  }

  /// The configuration the server was created with.
  public var configuration: Configuration { core.configuration }

  /// The bound port (the configured one before ``start()``).
  public var port: Int { core.state.withLock { $0.port } }

  /// `http://127.0.0.1:PORT`, without a trailing slash.
  public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

  /// The data being served: the ground truth to compare answers with.
  public var dataset: MockDataset { core.configuration.dataset }

  /// Queues faults for a route: each request on the route takes the next one; when the queue
  /// is empty the route behaves normally (or by its mode). Appends to faults already queued.
  public func script(_ route: MockRoute, _ faults: [MockFault]) {
    core.state.withLock { $0.scripts[route, default: []].append(contentsOf: faults) }
  }

  /// Sets the persistent faults applied to every request on a route; `[]` clears them.
  public func setMode(_ route: MockRoute, _ faults: [MockFault]) {
    core.state.withLock { $0.modes[route] = faults }
  }

  /// Makes `/health` answer 503 `"status":"degraded"` (or healthy again).
  public func setDegraded(_ degraded: Bool) {
    core.state.withLock { $0.degraded = degraded }
  }

  /// Makes `/health` name another DNE edition (`dne`), as cep.is does when the Correios
  /// publish a new one.
  public func setEdition(_ edition: String) {
    core.state.withLock { $0.edition = edition }
  }

  /// Every request received (including control requests and ones answered with faults; not
  /// unparsable ones), in arrival order.
  public var requests: [MockRequestRecord] { core.state.withLock { $0.log } }

  /// Empties ``requests``.
  public func clearLog() {
    core.state.withLock { state in
      state.logDropped += state.log.count
      state.log.removeAll()
    }
  }

  /// How many faults of each kind were injected (by script, mode or chaos), keyed by
  /// ``MockFault/name``. Faults that do not apply to the route (CSV faults elsewhere) are not
  /// counted.
  public var faultCounts: [String: Int] { core.state.withLock { $0.faultCounts } }

  /// How many requests were received (all routes, control included).
  public var requestCount: Int { core.state.withLock { $0.requestCount } }

  /// How many connections are open right now.
  public var openConnections: Int { core.state.withLock { $0.connections.count } }

  /// The most requests on `route` the server was answering at once — each from its arrival
  /// until its answer starts to be written, delays included — since the start or the last
  /// ``reset()``: how many requests a client had in flight together.
  public func peakConcurrentRequests(on route: MockRoute) -> Int {
    core.state.withLock { $0.peakAnswering[route] ?? 0 }
  }

  /// Clears scripts, modes, the log and the counters, restarts the chaos sequence and restores
  /// the configured degraded flag and edition.
  public func reset() {
    core.reset()
  }
}

/// One request received by a ``MockServer``.
public struct MockRequestRecord: Sendable, Hashable, Codable {
  /// The method, e.g. `GET`.
  public var method: String
  /// The path as received (percent-encoding kept), without the query.
  public var path: String
  /// The query string (after `?`), or `nil`.
  public var query: String?
  /// The header fields, names lowercased.
  public var headers: [String: String]
  /// When the request was parsed.
  public var arrival: Date
  /// The route, or `nil` for control and unknown paths.
  public var route: MockRoute?
  /// Whether the client closed the connection before the response was completely written
  /// (during a ``MockFault/delayHeaders(_:)`` wait, a dribble or an endless body): the
  /// request was cancelled. A connection closed after the whole response went out is not
  /// counted.
  public var clientClosed: Bool

  /// Creates a record.
  public init(
    method: String, path: String, query: String?, headers: [String: String], arrival: Date,
    route: MockRoute?, clientClosed: Bool = false
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.headers = headers
    self.arrival = arrival
    self.route = route
    self.clientClosed = clientClosed
  }

  private enum CodingKeys: String, CodingKey {
    case method, path, query, headers, arrival, route, clientClosed
  }

  /// Decodes a record; a missing `clientClosed` (a log written before it existed) is `false`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    method = try container.decode(String.self, forKey: .method)
    path = try container.decode(String.self, forKey: .path)
    query = try container.decodeIfPresent(String.self, forKey: .query)
    headers = try container.decode([String: String].self, forKey: .headers)
    arrival = try container.decode(Date.self, forKey: .arrival)
    route = try container.decodeIfPresent(MockRoute.self, forKey: .route)
    clientClosed = try container.decodeIfPresent(Bool.self, forKey: .clientClosed) ?? false
  }

  /// The decoded query items (a repeated name keeps its last value).
  public var queryItems: [String: String] { queryDictionary(query) }
}

/// The server's mutable state (always accessed under ``ServerCore/state``'s lock).
struct ServerState {
  enum Phase {
    case idle
    case running
    case stopped
  }

  var phase = Phase.idle
  var port: Int
  var listenFD: Int32 = -1
  var wakeRead: Int32 = -1
  var wakeWrite: Int32 = -1
  var acceptThread: ThreadHandle?
  var connections: [Int: Int32] = [:]
  var threads: [Int: ThreadHandle] = [:]
  var finishedThreads: [Int] = []
  var nextConnectionID = 0
  var scripts: [MockRoute: [MockFault]] = [:]
  var modes: [MockRoute: [MockFault]] = [:]
  var degraded: Bool
  /// The DNE edition `/health` names.
  var edition: String
  var log: [MockRequestRecord] = []
  /// How many records were ever removed from the front of `log` (trimmed or cleared), so
  /// that `logDropped + index` names one record for good.
  var logDropped = 0
  var faultCounts: [String: Int] = [:]
  var requestCount = 0
  var chaosIndex = 0
  /// Requests of each route being answered now (from their logging until their answer starts
  /// to be written, delays included), and the most at once since the start or the last reset.
  var answering: [MockRoute: Int] = [:]
  var peakAnswering: [MockRoute: Int] = [:]
  /// Diagnostics for leak tests: the kernel thread ids of the server's threads (Linux) and the
  /// identities of the descriptors it opened (the first 10 000 of each).
  var threadIDs: [Int32] = []
  var descriptors: [DescriptorIdentity] = []
}

/// A descriptor number with the device and inode it referred to, so a test can tell whether
/// it is still open (a reused number refers to another inode).
struct DescriptorIdentity: Hashable, Sendable {
  var fd: Int32
  var device: UInt64
  var inode: UInt64

  init?(_ fd: Int32) {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    self.fd = fd
    self.device = UInt64(truncatingIfNeeded: info.st_dev)
    self.inode = UInt64(truncatingIfNeeded: info.st_ino)
  }
}

/// How a connection ends.
enum ConnectionEnd {
  case keepAlive
  case close
  case reset
  /// The client went away before the response was completely written.
  case clientGone
}

/// The engine behind ``MockServer``: listener, threads, state.
final class ServerCore: Sendable {
  let configuration: MockServer.Configuration
  let state: LockedValue<ServerState>
  /// Serializes `stop()` calls, so a second caller returns only once the first is done.
  private let stopping = LockedValue(false)
  let datasetCount: Int
  /// The `/csv` answers kept by query string, and their bytes in all (see
  /// ``MockServer/Configuration/keptCSVAnswerBytes``).
  let keptCSVAnswers = LockedValue((answers: [String: [UInt8]](), bytes: 0))

  init(configuration: MockServer.Configuration) {
    self.configuration = configuration
    self.state = LockedValue(
      ServerState(
        port: configuration.port, degraded: configuration.degraded,
        edition: configuration.edition))
    self.datasetCount = configuration.dataset.count
  }

  func start() throws {
    try state.withLock { state in
      switch state.phase {
      case .running: return
      case .stopped: throw MockServerError(description: "the server was stopped")
      case .idle: break
      }
      let listener = try Sockets.makeListener(port: configuration.port, backlog: 1_024)
      var pipeFDs: [Int32] = [-1, -1]
      guard pipe(&pipeFDs) == 0 else {
        let text = Sockets.errorText("pipe")
        _ = close(listener.fd)
        throw MockServerError(description: text)
      }
      Sockets.setCloseOnExec(pipeFDs[0])
      Sockets.setCloseOnExec(pipeFDs[1])
      let listenFD = listener.fd
      let wake = pipeFDs[0]
      state.descriptors += [listenFD, pipeFDs[0], pipeFDs[1]].compactMap(DescriptorIdentity.init)
      guard
        let handle = spawnThread({ [self] in
          recordThread()
          acceptLoop(listenFD: listenFD, wake: wake)
        })
      else {
        _ = close(listener.fd)
        _ = close(pipeFDs[0])
        _ = close(pipeFDs[1])
        throw MockServerError(description: "could not start the accept thread")
      }
      state.phase = .running
      state.port = listener.port
      state.listenFD = listener.fd
      state.wakeRead = pipeFDs[0]
      state.wakeWrite = pipeFDs[1]
      state.acceptThread = handle
    }
  }

  func stop() {
    stopping.withLock { _ in
      // Shut the connections down while holding the lock: a connection thread deregisters
      // its descriptor under the same lock before closing it, so every number shut down here
      // still belongs to this server (never to a reused descriptor).
      let snapshot = state.withLock { state -> (ThreadHandle?, Int32)? in
        defer { state.phase = .stopped }
        guard state.phase == .running else { return nil }
        for fd in state.connections.values { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        return (state.acceptThread, state.wakeWrite)
      }
      guard let (acceptThread, wakeWrite) = snapshot else { return }
      var byte: UInt8 = 1
      _ = write(wakeWrite, &byte, 1)
      if let acceptThread { joinThread(acceptThread) }
      // The accept thread is gone, so no connection can be added any more; shut down any
      // registered since the snapshot and join every connection thread.
      let threads = state.withLock { state in
        for fd in state.connections.values { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        let threads = Array(state.threads.values)
        state.threads.removeAll()
        state.finishedThreads.removeAll()
        return threads
      }
      for thread in threads { joinThread(thread) }
      state.withLock { state in
        _ = close(state.listenFD)
        _ = close(state.wakeRead)
        _ = close(state.wakeWrite)
        state.listenFD = -1
        state.wakeRead = -1
        state.wakeWrite = -1
        state.acceptThread = nil
      }
    }
  }

  func reset() {
    state.withLock { state in
      state.scripts.removeAll()
      state.modes.removeAll()
      state.logDropped += state.log.count
      state.log.removeAll()
      state.faultCounts.removeAll()
      state.requestCount = 0
      state.chaosIndex = 0
      state.peakAnswering = state.answering.filter { $0.value > 0 }
      state.degraded = configuration.degraded
      state.edition = configuration.edition
    }
  }

  /// Sleeps for `seconds` unless the server stops first; `false` when it stopped.
  func pause(_ seconds: TimeInterval, wake: Int32) -> Bool {
    var remaining = seconds
    while remaining > 0 {
      let slice = min(remaining, 1)
      let milliseconds = Int32(max(1, (slice * 1_000).rounded(.up)))
      var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
      let ready = poll(&fds, 1, milliseconds)
      if ready > 0 { return false }
      remaining -= slice
    }
    return true
  }

  /// How a wait in the middle of a response ended.
  enum PauseEnd {
    case elapsed
    case stopped
    case clientGone
  }

  /// Sleeps for `seconds` in the middle of answering on `fd`, ending early when the server
  /// stops or the client closes the connection (the end of its stream, or a reset).
  func pause(_ seconds: TimeInterval, wake: Int32, watching fd: Int32) -> PauseEnd {
    let start = Date()
    var watchClient = true
    while true {
      let remaining = seconds - Date().timeIntervalSince(start)
      if remaining <= 0 { return .elapsed }
      let milliseconds = Int32(max(1, (min(remaining, 1) * 1_000).rounded(.up)))
      var fds = [
        pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&fds, watchClient ? 2 : 1, milliseconds)
      if ready < 0 && errno != EINTR { return .stopped }
      if ready <= 0 { continue }
      if fds[0].revents != 0 { return .stopped }
      guard watchClient, fds[1].revents != 0 else { continue }
      var byte: UInt8 = 0
      let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
      if peeked == 0 { return .clientGone }
      if peeked < 0 {
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
        return .clientGone
      }
      // A pipelined request is waiting: the client is still there; stop watching its input
      // (it stays unread until this answer is out) so the wait does not spin.
      watchClient = false
    }
  }

  private func acceptLoop(listenFD: Int32, wake: Int32) {
    while true {
      switch Sockets.waitReadable(listenFD, wake: wake, timeoutMilliseconds: -1) {
      case .stopped: return
      case .timeout: continue
      case .readable: break
      }
      let fd = accept(listenFD, nil, nil)
      if fd < 0 {
        switch errno {
        case EINTR, EAGAIN, ECONNABORTED, EPROTO:
          continue
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
          // Out of descriptors: back off a little instead of spinning.
          if !pause(0.01, wake: wake) { return }
          continue
        default:
          return
        }
      }
      Sockets.configureConnection(fd)
      reapFinishedThreads()
      enum Admission {
        case accepted(Int)
        case full
        case stopped
      }
      let admission = state.withLock { state -> Admission in
        guard state.phase == .running else { return .stopped }
        guard state.connections.count < configuration.maxConnections else { return .full }
        let id = state.nextConnectionID
        state.nextConnectionID += 1
        state.connections[id] = fd
        if state.descriptors.count < 10_000, let identity = DescriptorIdentity(fd) {
          state.descriptors.append(identity)
        }
        return .accepted(id)
      }
      switch admission {
      case .stopped:
        _ = close(fd)
        return
      case .full:
        let body = #"{"mensagem":"Muitas conexões simultâneas"}"#
        let head =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
          + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
        _ = Array((head + body).utf8).withUnsafeBytes {
          send(fd, $0.baseAddress, $0.count, Sockets.sendFlags | Int32(MSG_DONTWAIT))
        }
        _ = close(fd)
      case .accepted(let id):
        let handle = spawnThread { [self] in
          recordThread()
          let end = serveConnection(fd: fd, wake: wake)
          finishConnection(id: id, fd: fd, end: end)
        }
        if let handle {
          state.withLock { $0.threads[id] = handle }
        } else {
          finishConnection(id: id, fd: fd, end: .close)
          state.withLock { state in state.finishedThreads.removeAll { $0 == id } }
        }
      }
    }
  }

  private func recordThread() {
    #if os(Linux)
      // `/proc/thread-self` links to `<pid>/task/<tid>` (portable across architectures, unlike
      // the gettid syscall number).
      var buffer = [CChar](repeating: 0, count: 64)
      let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
      guard length > 0 else { return }
      let link = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
      guard let id = link.split(separator: "/").last.flatMap({ Int32($0) }) else { return }
      state.withLock { state in
        if state.threadIDs.count < 10_000 { state.threadIDs.append(id) }
      }
    #endif
  }

  private func finishConnection(id: Int, fd: Int32, end: ConnectionEnd) {
    state.withLock { _ = $0.connections.removeValue(forKey: id) }
    switch end {
    case .reset:
      Sockets.setResetOnClose(fd)
    case .close, .keepAlive, .clientGone:
      lingeringClose(fd)
    }
    _ = close(fd)
    state.withLock { $0.finishedThreads.append(id) }
  }

  /// Half-closes and drains what the client still sends (briefly), so that it reads the
  /// answer before the connection goes, instead of getting a reset for unread input.
  private func lingeringClose(_ fd: Int32) {
    _ = shutdown(fd, Int32(SHUT_WR))
    var scratch = [UInt8](repeating: 0, count: 16_384)
    var drained = 0
    let deadline = Date().addingTimeInterval(0.2)
    while drained < 1_048_576 {
      let left = deadline.timeIntervalSinceNow
      if left <= 0 { break }
      var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
      guard poll(&fds, 1, Int32(max(1, left * 1_000))) > 0 else { break }
      let count = recv(fd, &scratch, scratch.count, 0)
      if count <= 0 { break }
      drained += count
    }
  }

  private func reapFinishedThreads() {
    let handles = state.withLock { state -> [ThreadHandle] in
      guard !state.finishedThreads.isEmpty else { return [] }
      var handles: [ThreadHandle] = []
      var waiting: [Int] = []
      for id in state.finishedThreads {
        if let handle = state.threads.removeValue(forKey: id) {
          handles.append(handle)
        } else {
          waiting.append(id)
        }
      }
      state.finishedThreads = waiting
      return handles
    }
    for handle in handles { joinThread(handle) }
  }

  /// Reads, parses and answers requests on one connection until it should close.
  private func serveConnection(fd: Int32, wake: Int32) -> ConnectionEnd {
    var buffer: [UInt8] = []
    buffer.reserveCapacity(4_096)
    var chunk = [UInt8](repeating: 0, count: 16_384)
    let idleMilliseconds = Int32(max(1, min(configuration.idleTimeout * 1_000, 86_400_000)))
    var mustParse = false
    var continueSent = false
    while true {
      if mustParse && !buffer.isEmpty {
        switch MockHTTPRequest.parse(buffer, limits: configuration.parserLimits) {
        case .complete(let request, let consumed):
          buffer.removeFirst(consumed)
          continueSent = false
          let end = respond(to: request, fd: fd, wake: wake)
          if end != .keepAlive { return end }
          continue
        case .invalid(let status, let reason):
          let body = jsonObject(["mensagem": .string("Requisição inválida: \(reason)")])
          var response = Response(status: status, contentType: jsonType, body: .bytes(body))
          response.close = true
          _ = deliver(response, fd: fd, wake: wake)
          return .close
        case .incomplete:
          mustParse = false
          if !continueSent && expectsContinue(buffer) {
            continueSent = true
            guard Sockets.sendAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else {
              return .close
            }
          }
        }
      }
      switch Sockets.waitReadable(fd, wake: wake, timeoutMilliseconds: idleMilliseconds) {
      case .stopped, .timeout: return .close
      case .readable: break
      }
      let count = recv(fd, &chunk, chunk.count, 0)
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { return .close }
      buffer.append(contentsOf: chunk[0..<count])
      mustParse = true
    }
  }

  /// Whether the buffer holds a complete head with `Expect: 100-continue` (its body is still
  /// to come): curl and URLSession wait for `100 Continue` before sending larger bodies.
  private func expectsContinue(_ buffer: [UInt8]) -> Bool {
    let terminator: [UInt8] = [13, 10, 13, 10]
    guard buffer.count >= 4,
      let end = (0...(buffer.count - 4)).first(where: {
        buffer[$0..<($0 + 4)].elementsEqual(terminator)
      })
    else { return false }
    let head = String(decoding: buffer[0..<end], as: UTF8.self).lowercased()
    return head.contains("\nexpect: 100-continue")
  }

  /// Logs the request, picks its faults, builds and sends the answer.
  private func respond(to request: MockHTTPRequest, fd: Int32, wake: Int32) -> ConnectionEnd {
    let target = Router.route(request.path)
    let route = target.route
    let arrival = Date()
    let chaos = configuration.chaos
    let maxLog = configuration.maxLogEntries
    let (faults, degraded, logIndex) = state.withLock { state -> ([MockFault], Bool, Int) in
      state.requestCount += 1
      let logIndex = state.logDropped + state.log.count
      state.log.append(
        MockRequestRecord(
          method: request.method, path: request.path, query: request.query,
          headers: request.headers, arrival: arrival, route: route))
      if state.log.count > maxLog {
        let dropped = min(state.log.count, max(state.log.count - maxLog, maxLog / 2))
        state.log.removeFirst(dropped)
        state.logDropped += dropped
      }
      guard let route else { return ([], state.degraded, logIndex) }
      let answering = state.answering[route, default: 0] + 1
      state.answering[route] = answering
      state.peakAnswering[route] = max(state.peakAnswering[route] ?? 0, answering)
      // Modes, then chaos, then the scripted fault: the most explicit one is applied last.
      var faults = state.modes[route] ?? []
      if let chaos, !route.isFallbackProvider {
        let index = state.chaosIndex
        state.chaosIndex += 1
        if let fault = chaos.fault(forRequestIndex: index) { faults.append(fault) }
      }
      if var queue = state.scripts[route], !queue.isEmpty {
        faults.append(queue.removeFirst())
        state.scripts[route] = queue
      }
      faults.removeAll { !$0.applies(to: route) }
      for fault in faults { state.faultCounts[fault.name, default: 0] += 1 }
      return (faults, state.degraded, logIndex)
    }
    var response = answer(request, target: target, faults: faults, degraded: degraded)
    if !request.keepAlive { response.close = true }
    if request.method == "HEAD" { response.headOnly = true }
    for fault in faults { apply(fault, to: &response, route: route) }
    // A request stops counting as answered once its answer starts to be written: a client
    // cannot have sent another request on the strength of this answer before then, and the
    // count is down by the time the client has read the answer.
    var answering = route
    let answered = {
      guard let route = answering else { return }
      self.state.withLock { $0.answering[route, default: 1] -= 1 }
      answering = nil
    }
    let end = deliver(response, fd: fd, wake: wake, writing: answered)
    answered()
    if end == .clientGone {
      state.withLock { state in
        // A server shutting down closes connections itself: that is not the client leaving.
        guard state.phase == .running else { return }
        let position = logIndex - state.logDropped
        if state.log.indices.contains(position) { state.log[position].clientClosed = true }
      }
    }
    return end
  }
}
