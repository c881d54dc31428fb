import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The errors thrown by ``MockServer/start()``.
public struct MockServerError: Error, CustomStringConvertible, Sendable {
  /// What failed, with the `errno` text.
  public var description: String
}

/// Thin wrappers over the POSIX socket calls, identical on Glibc and Darwin.
enum Sockets {
  static func errorText(_ call: String) -> String {
    "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
  }

  static func setCloseOnExec(_ fd: Int32) {
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
  }

  static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
    var value = value
    _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
  }

  /// Creates a listening TCP socket on 127.0.0.1:`port` and returns it with the bound port.
  static func makeListener(port: Int, backlog: Int32) throws -> (fd: Int32, port: Int) {
    #if canImport(Glibc)
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
      let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw MockServerError(description: errorText("socket")) }
    setCloseOnExec(fd)
    setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
    var address = sockaddr_in()
    #if canImport(Darwin)
      address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
    #endif
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
    address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else {
      let text = errorText("bind 127.0.0.1:\(port)")
      _ = close(fd)
      throw MockServerError(description: text)
    }
    guard listen(fd, backlog) == 0 else {
      let text = errorText("listen")
      _ = close(fd)
      throw MockServerError(description: text)
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else {
      let text = errorText("getsockname")
      _ = close(fd)
      throw MockServerError(description: text)
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
  }

  /// Prepares an accepted connection: close-on-exec, no delay, no SIGPIPE (Darwin).
  static func configureConnection(_ fd: Int32) {
    setCloseOnExec(fd)
    setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    #if canImport(Darwin)
      setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
    #endif
  }

  #if canImport(Glibc)
    static let sendFlags = Int32(MSG_NOSIGNAL)
  #else
    static let sendFlags: Int32 = 0
  #endif

  /// Sends all bytes; `false` when the peer went away (or the socket was shut down).
  static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    guard var pointer = bytes.baseAddress else { return true }
    var remaining = bytes.count
    while remaining > 0 {
      let sent = send(fd, pointer, remaining, sendFlags)
      if sent < 0 {
        if errno == EINTR { continue }
        return false
      }
      if sent == 0 { return false }
      pointer += sent
      remaining -= sent
    }
    return true
  }

  static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { sendAll(fd, $0) }
  }

  /// Makes the next `close` send a TCP RST instead of a FIN.
  static func setResetOnClose(_ fd: Int32) {
    var value = linger(l_onoff: 1, l_linger: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
  }

  /// Waits until `fd` is readable or `wake` (the server's stop pipe) is. Returns
  /// `.readable`, `.stopped` or `.timeout`.
  static func waitReadable(_ fd: Int32, wake: Int32, timeoutMilliseconds: Int32) -> WaitResult {
    var fds = [
      pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
      pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      let ready = poll(&fds, 2, timeoutMilliseconds)
      if ready < 0 {
        if errno == EINTR { continue }
        return .stopped
      }
      if ready == 0 { return .timeout }
      if fds[1].revents != 0 { return .stopped }
      return .readable
    }
  }

  enum WaitResult {
    case readable
    case stopped
    case timeout
  }

  /// Sleeps for `seconds` unless the server stops first (`wake` becomes readable); `false` when it stopped.
  static func pause(_ seconds: TimeInterval, wake: Int32) -> Bool {
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
  static func pause(_ seconds: TimeInterval, wake: Int32, watching fd: Int32) -> PauseEnd {
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
}

#if canImport(Darwin)
  typealias ThreadHandle = pthread_t?
#else
  typealias ThreadHandle = pthread_t
#endif

/// The body of a thread started by ``spawnThread(_:)``.
private final class ThreadBody {
  let work: () -> Void
  init(_ work: @escaping () -> Void) { self.work = work }
}

private func unwrapArgument(_ pointer: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer {
  pointer!
}

/// Starts a joinable POSIX thread (512 KiB stack) running `work`.
func spawnThread(_ work: @escaping @Sendable () -> Void) -> ThreadHandle? {
  var attributes = pthread_attr_t()
  pthread_attr_init(&attributes)
  defer { pthread_attr_destroy(&attributes) }
  pthread_attr_setstacksize(&attributes, 512 * 1024)
  let argument = Unmanaged.passRetained(ThreadBody(work)).toOpaque()
  #if canImport(Darwin)
    var handle: pthread_t?
  #else
    var handle = pthread_t()
  #endif
  let result = pthread_create(
    &handle, &attributes,
    { argument in
      let body = Unmanaged<ThreadBody>.fromOpaque(unwrapArgument(argument)).takeRetainedValue()
      body.work()
      return nil
    }, argument)
  guard result == 0 else {
    Unmanaged<ThreadBody>.fromOpaque(argument).release()
    return nil
  }
  return handle
}

/// Waits for a thread started by ``spawnThread(_:)`` to end.
func joinThread(_ handle: ThreadHandle) {
  #if canImport(Darwin)
    if let handle { pthread_join(handle, nil) }
  #else
    pthread_join(handle, nil)
  #endif
}
