import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// How a connection ends.
enum ConnectionEnd {
  case keepAlive
  case close
  case reset
  /// The client went away before the response was completely written.
  case clientGone
}

/// One accepted connection, served on its own thread: reads and parses its requests, has
/// them answered, and writes the answers with their delivery faults (delays, dribbling,
/// truncation, resets, endless bodies).
///
/// Its state is its descriptor and the server's wake pipe; the read buffer lives in
/// ``serve()`` for as long as the connection does. The engine closes the descriptor once
/// ``serve()`` returns.
struct MockConnection {
  /// The engine that accepted the connection (its configuration, ledger and responder).
  let engine: MockConnectionEngine
  /// The connection's socket.
  let fd: Int32
  /// The read end of the server's stop pipe: readable once the server stops.
  let wake: Int32

  /// Reads, parses and answers requests until the connection should close.
  func serve() -> ConnectionEnd {
    var buffer: [UInt8] = []
    buffer.reserveCapacity(4_096)
    var chunk = [UInt8](repeating: 0, count: 16_384)
    let idleMilliseconds = Int32(max(1, min(engine.configuration.idleTimeout * 1_000, 86_400_000)))
    var mustParse = false
    var continueSent = false
    while true {
      if mustParse && !buffer.isEmpty {
        switch MockHTTPRequest.parse(buffer, limits: engine.configuration.parserLimits) {
        case .complete(let request, let consumed):
          buffer.removeFirst(consumed)
          continueSent = false
          let end = respond(to: request)
          if end != .keepAlive { return end }
          continue
        case .invalid(let status, let reason):
          let body = jsonObject(["mensagem": .string("Requisição inválida: \(reason)")])
          var response = Response(status: status, contentType: jsonType, body: .bytes(body))
          response.close = true
          _ = deliver(response)
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

  /// Logs the request, puts it to the route's rate limit, picks its faults, builds and sends
  /// the answer.
  private func respond(to request: MockHTTPRequest) -> ConnectionEnd {
    let target = Router.route(request.path)
    let route = target.route
    let admission = engine.ledger.admit(request, route: route, arrival: Date())
    var response: Response
    if case .control(let name) = target {
      response = engine.ledger.control(name, request: request)
    } else if let refusal = admission.refusal, let route {
      response = refusal.response(route: route)
    } else {
      response = engine.responder.answer(
        request, target: target, faults: admission.faults, degraded: admission.degraded,
        edition: admission.edition)
    }
    if !request.keepAlive { response.close = true }
    if request.method == "HEAD" { response.headOnly = true }
    for fault in admission.faults { response.apply(fault, route: route) }
    // A request stops counting as answered once its answer starts to be written: a client
    // cannot have sent another request on the strength of this answer before then, and the
    // count is down by the time the client has read the answer.
    var answering = route
    let answered = {
      guard let route = answering else { return }
      engine.ledger.answered(route)
      answering = nil
    }
    let end = deliver(response, writing: answered)
    answered()
    // A server shutting down closes connections itself: that is not the client leaving.
    if end == .clientGone && engine.isRunning {
      engine.ledger.markClientClosed(admission.logIndex)
    }
    return end
  }

  // MARK: Delivery

  /// Sends the response, honouring its delivery faults. `.clientGone` when the client closed
  /// the connection before the response was completely written. `writing` is called once its
  /// delay, if any, is over, before its first byte is written.
  func deliver(_ response: Response, writing: () -> Void = {}) -> ConnectionEnd {
    /// A wait in the middle of the answer; `nil` to go on.
    func wait(_ seconds: TimeInterval) -> ConnectionEnd? {
      switch Sockets.pause(seconds, wake: wake, watching: fd) {
      case .elapsed: return nil
      case .stopped: return .close
      case .clientGone: return .clientGone
      }
    }
    if response.delay > 0, let end = wait(response.delay) { return end }
    writing()
    if response.resetBeforeHeaders { return .reset }
    let keep: ConnectionEnd = response.close ? .close : .keepAlive
    if case .endlessChunked(let prefix, let fill) = response.body {
      var headBytes = response.head(contentLength: nil)
      if response.headOnly { return Sockets.sendAll(fd, headBytes) ? keep : .clientGone }
      if response.resetAfterHeaders {
        _ = Sockets.sendAll(fd, headBytes)
        return .reset
      }
      headBytes += chunk(prefix)
      guard Sockets.sendAll(fd, headBytes) else { return .clientGone }
      return streamEndless(fill)
    }
    let total = response.body.length
    var out = response.head(contentLength: total)
    if response.headOnly { return Sockets.sendAll(fd, out) ? keep : .clientGone }
    if response.resetAfterHeaders {
      _ = Sockets.sendAll(fd, out)
      return .reset
    }
    let limit = response.truncate ? total / 2 : total
    var offset = 0
    if let gap = response.dribbleGap {
      guard Sockets.sendAll(fd, out) else { return .clientGone }
      out.removeAll(keepingCapacity: true)
      let dribbled = min(limit, engine.configuration.maxDribbleBytes)
      while offset < dribbled {
        var byte: [UInt8] = []
        response.body.append(offset..<(offset + 1), to: &byte)
        guard Sockets.sendAll(fd, byte) else { return .clientGone }
        offset += 1
        if offset < limit, let end = wait(gap) { return end }
      }
    }
    // Send the rest in pieces of at most 64 KiB (the head travels with the first one).
    // Past the first MiB, pieces are paced to about 16 MB/s, as for the endless body: a
    // loopback flood would stall every other URLSession in the client's process on Linux.
    repeat {
      let end = min(limit, offset + 65_536)
      response.body.append(offset..<end, to: &out)
      guard Sockets.sendAll(fd, out) else { return .clientGone }
      out.removeAll(keepingCapacity: true)
      offset = end
      if offset > 1 << 20 && offset < limit && !Sockets.pause(0.004, wake: wake) { return .close }
    } while offset < limit
    return response.truncate ? .close : keep
  }

  private func chunk(_ bytes: [UInt8]) -> [UInt8] {
    Array(String(bytes.count, radix: 16).utf8) + [13, 10] + bytes + [13, 10]
  }

  /// Sends chunks until the client goes (`.clientGone`), the server stops, 60 s pass or
  /// 2 GiB were sent (`.close`).
  private func streamEndless(_ fill: [UInt8]) -> ConnectionEnd {
    var payload: [UInt8] = []
    while payload.count < 16_384 { payload += fill }
    let piece = chunk(payload)
    let deadline = Date().addingTimeInterval(60)
    var sent = 0
    while sent < 2_147_483_648 {
      guard Sockets.sendAll(fd, piece) else { return .clientGone }
      sent += piece.count
      // Paced to about 8 MB/s (a fast real link) rather than loopback speed: on Linux,
      // FoundationNetworking drives every URLSession in a process from one shared queue, and
      // a loopback flood would stall every other test's requests, not just this client's.
      var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
      if poll(&fds, 1, 2) > 0 { return .close }
      if Date() > deadline { return .close }
    }
    return .close
  }
}
