import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The connection engine behind a ``MockServer``: the listening socket, the accept thread, one
/// thread per connection (each a ``MockConnection``), and their orderly shutdown.
///
/// It owns the server's lifecycle (idle, running, stopped), the bound port, the open
/// connections and the threads serving them, and the descriptor and thread diagnostics that
/// leak tests read. What the server has been told and has seen is the ``RequestLedger``'s;
/// the answers are the ``Responder``'s.
final class MockConnectionEngine: Sendable {
  /// The engine's mutable state (always accessed under ``MockConnectionEngine/state``'s lock).
  struct State {
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
    /// Diagnostics for leak tests: the kernel thread ids of the server's threads (Linux) and the
    /// identities of the descriptors it opened (the first 10 000 of each).
    var threadIDs: [Int32] = []
    var descriptors: [DescriptorIdentity] = []
  }

  let configuration: MockServer.Configuration
  let state: LockedValue<State>
  /// Serializes `stop()` calls, so a second caller returns only once the first is done.
  private let stopping = LockedValue(false)
  /// Where requests are logged and their faults picked.
  let ledger: RequestLedger
  /// What builds the answers.
  let responder: Responder

  init(configuration: MockServer.Configuration, ledger: RequestLedger, responder: Responder) {
    self.configuration = configuration
    self.state = LockedValue(State(port: configuration.port))
    self.ledger = ledger
    self.responder = responder
  }

  /// The bound port (the configured one before ``start()``).
  var port: Int { state.withLock { $0.port } }

  /// How many connections are open right now.
  var openConnections: Int { state.withLock { $0.connections.count } }

  /// Whether the server is serving (started and not stopped).
  var isRunning: Bool { state.withLock { $0.phase == .running } }

  /// Binds the listener and starts the accept thread; does nothing if already running.
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

  /// Closes the listener and every connection and joins every thread. Idempotent.
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
          if !Sockets.pause(0.01, wake: wake) { return }
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
          let end = MockConnection(engine: self, fd: fd, wake: wake).serve()
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
}
