import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc

  private let systemSend = Glibc.send
  private let systemListen = Glibc.listen
  private let systemConnect = Glibc.connect
  private let streamSocket = Int32(SOCK_STREAM.rawValue)
  private let noSignal = Int32(MSG_NOSIGNAL)
#elseif canImport(Darwin)
  import Darwin

  private let systemSend = Darwin.send
  private let systemListen = Darwin.listen
  private let systemConnect = Darwin.connect
  private let streamSocket = SOCK_STREAM
  private let noSignal: Int32 = 0
#endif

/// A forward HTTP proxy on 127.0.0.1 for the package's own tests (`package`, not public API),
/// logging every request it is asked to relay.
///
/// - `GET http://host[:port]/path` (absolute form): logged as `GET http://host[:port]/path` and
///   relayed, whatever the host, to `upstreamPort` on 127.0.0.1 (so a host no resolver knows
///   proves the request went through the proxy), with `Connection: close`;
/// - `CONNECT host:443`: logged as `CONNECT host:443` and refused with 502 (no TLS server is
///   needed to prove the tunnel was asked of the proxy);
/// - `CONNECT host:port` to any other port: logged, and tunnelled to `upstreamPort` (the way
///   AsyncHTTPClient sends even plain `http` through a proxy);
/// - anything else (an origin-form request, which a client that is not using a proxy sends):
///   logged as it is and answered 400.
///
/// Each connection is served on a thread of its own; ``stop()`` closes the listener and waits
/// for every thread.
///
/// `Sendable` as checked by the compiler: every stored property is a constant, and the log and
/// the connection bookkeeping are `LockedValue`s.
final class ForwardProxy: Sendable {
  /// The port it listens on.
  package let port: Int
  private let listener: Int32
  private let upstreamPort: Int
  private let log = LockedValue([String]())
  private let state = LockedValue((stopped: false, started: 1, done: 0, open: Set<Int32>()))

  /// What the proxy was asked to relay, in arrival order.
  var relayed: [String] { log.withLock { $0 } }

  /// The proxy as `http_proxy` names it.
  var url: String { "http://127.0.0.1:\(port)" }

  /// Starts a proxy that relays absolute-form requests to 127.0.0.1:`upstreamPort`.
  package init(upstreamPort: Int) throws {
    self.upstreamPort = upstreamPort
    let (fd, port) = try Self.listen()
    self.listener = fd
    self.port = port
    Thread.detachNewThread { [self] in acceptLoop() }
  }

  /// Stops accepting, shuts every relayed connection down and waits (briefly) for the threads.
  func stop() {
    // Wakes every thread blocked in `poll` or `recv` on a connection at once. Under the lock:
    // a connection thread takes its descriptor out of `open` under the same lock before
    // closing it, so every number shut down here is still a connection of this proxy (never
    // a descriptor the process reused for something else after the thread closed it).
    let count = state.withLock { state -> Int in
      state.stopped = true
      for fd in state.open { shutdown(fd, Int32(SHUT_RDWR)) }
      return state.started
    }
    let deadline = Date().addingTimeInterval(2)
    while state.withLock({ $0.done }) < count, Date() < deadline { usleep(1_000) }
    close(listener)
  }

  /// Registers `fd` so that ``stop()`` can shut it down; `false` once stopped.
  private func track(_ fd: Int32) -> Bool {
    state.withLock { state in
      guard !state.stopped else { return false }
      state.open.insert(fd)
      return true
    }
  }

  /// A tracked connection to the upstream, or `nil` (when it fails or the proxy stopped).
  private func connectUpstream() -> Int32? {
    guard let fd = Self.connect(port: upstreamPort) else { return nil }
    guard track(fd) else {
      close(fd)
      return nil
    }
    return fd
  }

  /// Out of `open` first, then closed (see ``stop()``).
  private func untrackAndClose(_ fd: Int32) {
    state.withLock { _ = $0.open.remove(fd) }
    close(fd)
  }

  private var stopped: Bool { state.withLock { $0.stopped } }

  private func acceptLoop() {
    defer { state.withLock { $0.done += 1 } }
    while !stopped {
      var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, 50) > 0 else { continue }
      let connection = accept(listener, nil, nil)
      guard connection >= 0 else { continue }
      let accepted = state.withLock { state -> Bool in
        guard !state.stopped else { return false }
        state.started += 1
        state.open.insert(connection)
        return true
      }
      guard accepted else {
        close(connection)
        continue
      }
      Thread.detachNewThread { [self] in
        serve(connection)
        state.withLock { $0.done += 1 }
      }
    }
  }

  private func serve(_ client: Int32) {
    defer { untrackAndClose(client) }
    guard let head = readHead(client) else { return }
    var lines = head.components(separatedBy: "\r\n")
    let requestLine = lines.removeFirst().split(separator: " ").map(String.init)
    guard requestLine.count == 3 else { return }
    let (method, target) = (requestLine[0], requestLine[1])
    log.withLock { $0.append("\(method) \(target)") }
    if method == "CONNECT" {
      guard !target.hasSuffix(":443"), let upstream = connectUpstream() else {
        send(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        return
      }
      defer { untrackAndClose(upstream) }
      send(client, "HTTP/1.1 200 Connection established\r\n\r\n")
      tunnel(client, upstream)
      return
    }
    guard target.lowercased().hasPrefix("http://") else {
      send(client, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      return
    }
    let afterScheme = target.dropFirst("http://".count)
    let path = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/"
    let kept = lines.filter { line in
      let name = line.split(separator: ":").first?.lowercased() ?? ""
      return !line.isEmpty && name != "connection" && name != "proxy-connection"
    }
    guard let upstream = connectUpstream() else {
      send(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      return
    }
    defer { untrackAndClose(upstream) }
    send(
      upstream,
      "\(method) \(path) HTTP/1.1\r\n" + kept.joined(separator: "\r\n")
        + "\r\nConnection: close\r\n\r\n")
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while true {
      let count = recv(upstream, &buffer, buffer.count, 0)
      guard count > 0 else { return }
      guard buffer.withUnsafeBytes({ Self.sendAll(client, $0.prefix(count)) }) else { return }
    }
  }

  /// Copies bytes both ways until either side closes (or 10 s pass without any).
  private func tunnel(_ first: Int32, _ second: Int32) {
    var buffer = [UInt8](repeating: 0, count: 16_384)
    var pollers = [
      pollfd(fd: first, events: Int16(POLLIN), revents: 0),
      pollfd(fd: second, events: Int16(POLLIN), revents: 0),
    ]
    while poll(&pollers, 2, 10_000) > 0 {
      for (index, poller) in pollers.enumerated() where poller.revents != 0 {
        let (from, to) = index == 0 ? (first, second) : (second, first)
        let count = recv(from, &buffer, buffer.count, 0)
        guard count > 0, buffer.withUnsafeBytes({ Self.sendAll(to, $0.prefix(count)) }) else {
          return
        }
      }
      for index in pollers.indices { pollers[index].revents = 0 }
    }
  }

  /// The request head, without the blank line that ends it.
  private func readHead(_ fd: Int32) -> String? {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1)
    let end: [UInt8] = [13, 10, 13, 10]
    while bytes.count < 65_536 {
      var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, 5_000) > 0, recv(fd, &buffer, 1, 0) == 1 else { return nil }
      bytes.append(buffer[0])
      if bytes.count >= 4, Array(bytes.suffix(4)) == end {
        return String(decoding: bytes.dropLast(4), as: UTF8.self)
      }
    }
    return nil
  }

  private func send(_ fd: Int32, _ text: String) {
    _ = Array(text.utf8).withUnsafeBytes { Self.sendAll(fd, $0[...]) }
  }

  private static func sendAll(_ fd: Int32, _ bytes: Slice<UnsafeRawBufferPointer>) -> Bool {
    var offset = bytes.startIndex
    while offset < bytes.endIndex {
      guard let base = bytes.base.baseAddress else { return false }
      let sent = systemSend(fd, base + offset, bytes.endIndex - offset, noSignal)
      guard sent > 0 else { return false }
      offset += sent
    }
    return true
  }

  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
    return address
  }

  private static func listen() throws -> (Int32, Int) {
    let fd = socket(AF_INET, streamSocket, 0)
    guard fd >= 0 else { throw ProxyStartError() }
    var address = loopback(port: 0)
    let size = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) }
    }
    guard bound == 0, systemListen(fd, 64) == 0 else {
      close(fd)
      throw ProxyStartError()
    }
    var length = size
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
  }

  private static func connect(port: Int) -> Int32? {
    let fd = socket(AF_INET, streamSocket, 0)
    guard fd >= 0 else { return nil }
    var address = loopback(port: port)
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      close(fd)
      return nil
    }
    return fd
  }
}

/// The proxy could not bind 127.0.0.1.
package struct ProxyStartError: Error {}
