import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where a command writes: stdout for data, stderr for diagnostics — the process's own
/// descriptors, or in-memory buffers for in-process tests.
///
/// Its mutable state lives in one ``LockedValue``, the package's lock type.
final class Console: Sendable {
  private struct Buffers {
    var out: [UInt8] = []
    var err: [UInt8] = []
    var networkFailures = 0
  }

  private let buffers = LockedValue(Buffers())
  private let capturing: Bool
  /// Whether stdout is a terminal.
  let stdoutIsTTY: Bool
  /// Whether stderr is a terminal.
  let stderrIsTTY: Bool
  /// Whether colour may be used (a terminal and no `NO_COLOR`).
  let stdoutColor: Bool
  /// Whether colour may be used on stderr.
  let stderrColor: Bool

  /// A console on the process's stdout and stderr.
  init(environment: [String: String]) {
    capturing = false
    stdoutIsTTY = isatty(1) == 1
    stderrIsTTY = isatty(2) == 1
    let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
    let dumb = environment["TERM"] == "dumb"
    stdoutColor = stdoutIsTTY && !noColor && !dumb
    stderrColor = stderrIsTTY && !noColor && !dumb
  }

  /// A console that keeps everything in memory, for tests.
  init(capturingWithTTY tty: Bool = false, color: Bool = false) {
    capturing = true
    stdoutIsTTY = tty
    stderrIsTTY = tty
    stdoutColor = color
    stderrColor = color
  }

  /// Writes data to stdout (buffered; see ``flush()``).
  func out(_ text: String) {
    out(bytes: Array(text.utf8))
  }

  /// Writes UTF-8 bytes to stdout (buffered; see ``flush()``).
  ///
  /// Bytes reach stdout under the lock that buffers them, so that a ``flush()`` from another
  /// thread (`batch`'s periodic one) can never write later bytes before earlier ones.
  func out(bytes: [UInt8]) {
    let capturing = self.capturing
    buffers.withLock { buffers in
      buffers.out.append(contentsOf: bytes)
      guard !capturing, buffers.out.count >= 1 << 16 else { return }
      writeAll(1, buffers.out)
      buffers.out.removeAll(keepingCapacity: true)
    }
  }

  /// Writes a diagnostic line to stderr, at once.
  func err(_ text: String) {
    let bytes = Array(text.utf8)
    if capturing {
      buffers.withLock { $0.err.append(contentsOf: bytes) }
    } else {
      writeAll(2, bytes)
    }
  }

  /// `cepis: <message>` on stderr, with `error:` in red on a colour terminal.
  func error(_ message: String) {
    let label = stderrColor ? "\u{1B}[31merror:\u{1B}[0m" : "error:"
    err("cepis: \(label) \(message)\n")
  }

  /// Records that an API could not be reached (reported however the output format shows it).
  func noteNetworkFailure() {
    buffers.withLock { $0.networkFailures += 1 }
  }

  /// Records a network failure when `status` is one.
  func noteFailure(in status: CEPStatus) {
    if status == .error(kind: "network_error") { noteNetworkFailure() }
  }

  /// Whether any API could not be reached during this run.
  var sawNetworkFailure: Bool {
    buffers.withLock { $0.networkFailures > 0 }
  }

  /// `cepis: <message>` on stderr.
  func note(_ message: String) {
    err("cepis: \(message)\n")
  }

  /// Writes what stdout has buffered; safe from any thread (see ``out(bytes:)``).
  func flush() {
    let capturing = self.capturing
    buffers.withLock { buffers in
      guard !capturing, !buffers.out.isEmpty else { return }
      writeAll(1, buffers.out)
      buffers.out.removeAll(keepingCapacity: true)
    }
  }

  /// What was written to stdout (capturing consoles only).
  var capturedOut: String { buffers.withLock { String(decoding: $0.out, as: UTF8.self) } }
  /// What was written to stderr (capturing consoles only).
  var capturedErr: String { buffers.withLock { String(decoding: $0.err, as: UTF8.self) } }
}

/// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`.
///
/// - Returns: `false` when the descriptor refuses (a closed pipe, a full disk).
@discardableResult
func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
  bytes.withUnsafeBytes { buffer in
    var offset = 0
    while offset < buffer.count {
      let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
      if written < 0 {
        if errno == EINTR { continue }
        return false
      }
      offset += written
    }
    return true
  }
}

/// A flag set from a signal handler and read by the main loop: a count under the package's one
/// lock type.
struct AtomicFlag: Sendable {
  private let raised = LockedValue(0)

  /// Raises the flag and returns how many times it had been raised before.
  @discardableResult
  func raise() -> Int {
    raised.withLock { value in
      value += 1
      return value - 1
    }
  }

  /// Whether the flag has been raised.
  var isRaised: Bool { raised.withLock { $0 > 0 } }
}
