import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A child process for tests, started with `posix_spawn` rather than Foundation's `Process`.
///
/// On Linux, `Process.run()` looks for the highest open descriptor by copying each
/// `/proc/self/fd` entry's whole 256-byte `d_name` out of `readdir`'s buffer
/// (swift-corelibs-foundation #5472, in Swift 6.3.1). With about 1,400 descriptors open, as
/// when a test process holds many loopback connections, an entry can sit at the end of that
/// buffer, and the copy then reads past it: the test process crashed with SIGSEGV once in CI.
/// This type closes the child's inherited descriptors without reading that directory entry by
/// entry: `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34 and later), or else a safe
/// listing of `/proc/self/fd` (`FileManager`, which reads each name to its length); on Apple
/// platforms `POSIX_SPAWN_CLOEXEC_DEFAULT`.
public final class ChildProcess: @unchecked Sendable {
  /// Where one of the child's standard streams goes.
  public enum Stream {
    /// The test process's own stream.
    case inherit
    /// An open file; the caller keeps (and closes) its handle.
    case file(FileHandle)
    /// One end of a pipe: the read end for standard input, the write end for output. The
    /// child's end is closed in this process once the child has started, so that reading
    /// the other end sees the end of the file when the child exits.
    case pipe(Pipe)
  }

  /// How a child ended.
  public enum Termination: Equatable, Sendable {
    /// It exited with this status.
    case exited(Int32)
    /// A signal with this number ended it.
    case signalled(Int32)

    /// The status a shell would report: the exit status, or 128 plus the signal's number.
    public var status: Int32 {
      switch self {
      case .exited(let code): code
      case .signalled(let signal): 128 + signal
      }
    }
  }

  /// A failed `posix_spawn` call.
  public struct SpawnError: Error, CustomStringConvertible {
    /// The call that failed.
    public var call: String
    /// The `errno` value it returned.
    public var code: Int32

    /// The call and the system's text for the error.
    public var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
  }

  /// The child's process identifier.
  public let pid: pid_t
  /// The arguments it was started with, without the executable.
  public let arguments: [String]

  private let lock = NSLock()
  private var ended: Termination?

  private init(pid: pid_t, arguments: [String]) {
    self.pid = pid
    self.arguments = arguments
  }

  /// Starts `executable` with `arguments` in its own process group.
  ///
  /// - Parameter environment: the child's environment; `nil` passes this process's.
  public static func spawn(
    _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
    stdin: Stream = .inherit, stdout: Stream = .inherit, stderr: Stream = .inherit
  ) throws -> ChildProcess {
    #if canImport(Darwin)
      var actions: posix_spawn_file_actions_t? = nil
      var attributes: posix_spawnattr_t? = nil
    #else
      var actions = posix_spawn_file_actions_t()
      var attributes = posix_spawnattr_t()
    #endif
    try check("posix_spawn_file_actions_init", posix_spawn_file_actions_init(&actions))
    defer { posix_spawn_file_actions_destroy(&actions) }
    try check("posix_spawnattr_init", posix_spawnattr_init(&attributes))
    defer { posix_spawnattr_destroy(&attributes) }

    let streams: [(Stream, Int32)] = [(stdin, 0), (stdout, 1), (stderr, 2)]
    for (stream, target) in streams {
      let source: Int32? =
        switch stream {
        case .inherit: nil
        case .file(let handle): handle.fileDescriptor
        case .pipe(let pipe):
          target == 0
            ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
        }
      if let source {
        try check(
          "posix_spawn_file_actions_adddup2",
          posix_spawn_file_actions_adddup2(&actions, source, target))
      }
    }
    var flags = Int32(POSIX_SPAWN_SETPGROUP)
    #if canImport(Darwin)
      flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
    #else
      // After the dup2s above: every descriptor from 3 up is closed in the child.
      try closeFromThree(&actions)
    #endif
    try check("posix_spawnattr_setflags", posix_spawnattr_setflags(&attributes, Int16(flags)))

    let environment = environment ?? ProcessInfo.processInfo.environment
    let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv + envp { free(pointer) }
    }
    var pid = pid_t()
    let result = executable.path.withCString { path in
      posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    }
    try check("posix_spawn(\(executable.lastPathComponent))", result)

    for (stream, target) in streams {
      guard case .pipe(let pipe) = stream else { continue }
      try? (target == 0 ? pipe.fileHandleForReading : pipe.fileHandleForWriting).close()
    }
    return ChildProcess(pid: pid, arguments: arguments)
  }

  #if !canImport(Darwin)
    private typealias CloseFrom =
      @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which the Glibc module does not
    /// declare.
    private static let closeFrom: CloseFrom? = {
      guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
      return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    private static func closeFromThree(_ actions: inout posix_spawn_file_actions_t) throws {
      if let closeFrom {
        try check("posix_spawn_file_actions_addclosefrom_np", closeFrom(&actions, 3))
        return
      }
      // A descriptor closed between this listing and the spawn is fine: glibc ignores EBADF
      // from a close action on a descriptor within the limit.
      let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
      for descriptor in names.compactMap({ Int32($0) }) where descriptor >= 3 {
        try check(
          "posix_spawn_file_actions_addclose",
          posix_spawn_file_actions_addclose(&actions, descriptor))
      }
    }
  #endif

  private static func check(_ call: String, _ result: Int32) throws {
    if result != 0 { throw SpawnError(call: call, code: result) }
  }

  /// Sends `signal` to the child (nothing once it has been reaped).
  public func signal(_ signal: Int32) {
    lock.withLock {
      if ended == nil { _ = kill(pid, signal) }
    }
  }

  /// How the child ended, or `nil` while it runs. Does not block.
  public func exited() -> Termination? {
    lock.withLock {
      if let ended { return ended }
      var status: Int32 = 0
      var result: pid_t
      repeat {
        result = waitpid(pid, &status, WNOHANG)
      } while result == -1 && errno == EINTR
      guard result == pid else { return nil }
      // The wait status: the low 7 bits are the ending signal (0 for an exit), and the exit
      // status sits in the byte above them (WIFEXITED, WEXITSTATUS, WTERMSIG are C macros).
      let signal = status & 0x7f
      let termination: Termination =
        signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
      ended = termination
      return termination
    }
  }

  /// Waits for the child to end, checking every 10 ms without blocking a thread.
  public func termination() async throws -> Termination {
    while true {
      if let ended = exited() { return ended }
      try await Task.sleep(nanoseconds: 10_000_000)
    }
  }

  /// Reads `handle` to its end on a thread of its own: not on one of the concurrency pool's,
  /// nor on Dispatch's global queue, whose few threads (two on a two-core machine) also run
  /// the library's and the tests' timers.
  public static func readToEnd(_ handle: FileHandle) async -> Data {
    await onOwnThread { handle.readDataToEndOfFile() }
  }

  /// The next bytes available on `handle` (empty at its end), read on a thread of its own.
  public static func available(_ handle: FileHandle) async -> Data {
    await onOwnThread { handle.availableData }
  }

  private static func onOwnThread(_ read: @escaping @Sendable () -> Data) async -> Data {
    await withCheckedContinuation { continuation in
      Thread { continuation.resume(returning: read()) }.start()
    }
  }
}
