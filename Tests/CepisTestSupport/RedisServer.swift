import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A `redis-server` for tests (Debian's; valkey-swift speaks to Redis 7): on a free loopback
/// port, persistence off, in a folder of its own; killed, paused, resumed and restarted on the
/// same port by the fault tests, and stopped by ``stop()``.
public final class RedisServer: @unchecked Sendable {
  /// The executable: `redis-server` (or `valkey-server`) on the `PATH`, or `nil`.
  public static let executable: URL? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for folder in path.split(separator: ":") {
      for name in ["redis-server", "valkey-server"] {
        let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
      }
    }
    return nil
  }()

  /// Whether a server can be started here (a test that needs one is skipped otherwise).
  public static var isAvailable: Bool { executable != nil }

  /// Why no server can start: the executable is missing.
  public struct Missing: Error, CustomStringConvertible {
    /// What to install.
    public var description: String {
      "redis-server is not installed (apt-get install redis-server): the Valkey cache's tests need it"
    }
  }

  /// The server did not accept connections in time.
  public struct NotReady: Error, CustomStringConvertible {
    /// What did not happen.
    public var description: String { "redis-server did not accept connections within 10 s" }
  }

  /// The loopback port it listens on.
  public let port: Int
  private let folder: URL
  private let extraArguments: [String]
  // `process` changes only in `start()`, `restart()` and `stop()`, which the tests call from
  // one task at a time; `lock` guards it against a signal sent meanwhile.
  private let lock = NSLock()
  private var process: ChildProcess?

  /// A certificate and key (PEM) for a server that speaks TLS only.
  public struct TLSIdentity: Sendable {
    /// The server's certificate chain, in PEM.
    public var certificatePEM: String
    /// Its private key, in PEM.
    public var privateKeyPEM: String

    /// An identity of `certificatePEM` and `privateKeyPEM`.
    public init(certificatePEM: String, privateKeyPEM: String) {
      self.certificatePEM = certificatePEM
      self.privateKeyPEM = privateKeyPEM
    }
  }

  /// Starts a server on a free loopback port, with `arguments` added to its command line;
  /// with `tls`, the port speaks TLS only (clients are not asked for certificates).
  public init(arguments: [String] = [], tls: TLSIdentity? = nil) throws {
    guard let executable = Self.executable else { throw Missing() }
    port = try Self.freePort()
    folder = FileManager.default.temporaryDirectory.appendingPathComponent(
      "cepis-redis-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var extra = arguments
    if let tls {
      let certificate = folder.appendingPathComponent("server.pem")
      let key = folder.appendingPathComponent("server.key")
      try Data(tls.certificatePEM.utf8).write(to: certificate)
      try Data(tls.privateKeyPEM.utf8).write(to: key)
      extra += [
        "--port", "0", "--tls-port", String(port), "--tls-cert-file", certificate.path,
        "--tls-key-file", key.path, "--tls-auth-clients", "no",
      ]
    }
    extraArguments = extra
    try start(executable)
  }

  deinit {
    process?.signal(SIGKILL)
    _ = process?.exited()
    try? FileManager.default.removeItem(at: folder)
  }

  private func start(_ executable: URL) throws {
    let arguments =
      [
        "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", folder.path, "--protected-mode", "no", "--logfile", "",
        "--loglevel", "warning",
      ] + extraArguments
    // Neither stream of the test process: a server left behind must not hold them open.
    let devNull = FileHandle(forWritingAtPath: "/dev/null")
    let quiet: ChildProcess.Stream = devNull.map { .file($0) } ?? .inherit
    let child = try ChildProcess.spawn(executable, arguments, stdout: quiet, stderr: quiet)
    lock.withLock { process = child }
    try waitUntilReady()
  }

  /// Polls the port until the server accepts a connection.
  private func waitUntilReady() throws {
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      if Self.accepts(port: port) { return }
      usleep(20_000)
    }
    throw NotReady()
  }

  /// Kills the server (`SIGKILL`): every connection drops, nothing is saved.
  public func kill9() {
    lock.withLock {
      process?.signal(SIGKILL)
      _ = process?.exited()
    }
    // Reaps it, for at most two seconds: a child some other code reaped first (a
    // `waitpid(-1)` elsewhere in the process) never reads as ended here, and its port is free
    // once it is dead, reaped or not.
    let deadline = Date().addingTimeInterval(2)
    while lock.withLock({ process?.exited() == nil }), Date() < deadline { usleep(5_000) }
  }

  /// Pauses the server (`SIGSTOP`): connections stay open and nothing answers.
  public func pause() { lock.withLock { process?.signal(SIGSTOP) } }

  /// Resumes a paused server (`SIGCONT`).
  public func resume() { lock.withLock { process?.signal(SIGCONT) } }

  /// Starts the server again on the same port, empty (after ``kill9()``).
  public func restart() throws {
    guard let executable = Self.executable else { throw Missing() }
    try start(executable)
  }

  /// Stops the server for good.
  public func stop() {
    kill9()
    try? FileManager.default.removeItem(at: folder)
  }

  /// Sends `arguments` as one command (RESP), after `AUTH` as `user` when given, on a
  /// connection of its own, and returns the raw replies (tests that plant or look for keys
  /// without a client).
  public func send(_ arguments: [String], as user: (name: String, password: String)? = nil) throws
    -> String
  {
    func encoded(_ arguments: [String]) -> String {
      var request = "*\(arguments.count)\r\n"
      for argument in arguments { request += "$\(argument.utf8.count)\r\n\(argument)\r\n" }
      return request
    }
    var request = encoded(arguments)
    if let user { request = encoded(["AUTH", user.name, user.password]) + request }
    let socket = try Self.connect(port: port)
    defer { close(socket) }
    // A server that does not answer fails the read after five seconds, never hangs the test.
    var limit = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    _ = request.withCString { write(socket, $0, strlen($0)) }
    var replies = ""
    var buffer = [UInt8](repeating: 0, count: 4_096)
    // Both replies, when AUTH went first: read until the command's own has arrived (a reply
    // line ends in CR LF; counted in bytes, as `Character` takes CR LF as one).
    let expected = user == nil ? 1 : 2
    while replies.utf8.filter({ $0 == 10 }).count < expected {
      let count = read(socket, &buffer, buffer.count)
      guard count > 0 else { break }
      replies += String(decoding: buffer.prefix(count), as: UTF8.self)
    }
    return replies
  }

  // MARK: Sockets

  private struct SocketFailure: Error, CustomStringConvertible {
    var call: String
    var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
  }

  private static func tcpSocket() throws -> Int32 {
    #if canImport(Glibc)
      let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
      let socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard socket >= 0 else { throw SocketFailure(call: "socket") }
    return socket
  }

  private static func connect(port: Int) throws -> Int32 {
    let socket = try tcpSocket()
    var address = loopbackSocketAddress(port: port)
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        #if canImport(Glibc)
          Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        #else
          Darwin.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        #endif
      }
    }
    guard result == 0 else {
      close(socket)
      throw SocketFailure(call: "connect")
    }
    return socket
  }

  private static func accepts(port: Int) -> Bool {
    guard let socket = try? connect(port: port) else { return false }
    close(socket)
    return true
  }

  /// A port the kernel has just handed out for loopback, and released.
  private static func freePort() throws -> Int {
    let socket = try tcpSocket()
    defer { close(socket) }
    var address = loopbackSocketAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else { throw SocketFailure(call: "bind") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
    }
    guard named == 0 else { throw SocketFailure(call: "getsockname") }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}

/// The IPv4 loopback address at `port`, for a test's raw sockets.
public func loopbackSocketAddress(port: Int) -> sockaddr_in {
  var address = sockaddr_in()
  #if canImport(Darwin)
    address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
  #endif
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
  address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
  return address
}
