import Foundation

/// A value guarded by a lock, shareable across tasks and threads.
///
/// `Synchronization.Mutex` needs macOS 15 / iOS 18, and the package still supports
/// macOS 10.15 / iOS 13, so the package keeps this small `NSLock` box instead: its one lock
/// type, used by the HTTP core, CepisMock and the command-line tool alike.
///
/// `@unchecked Sendable` is sound here: `value` is only ever read or written inside
/// `withLock`, which holds `lock` for the whole access, so no two threads touch it at once;
/// `Value: Sendable` means whatever escapes the closure is itself safe to share. (`lock` and
/// `value` are `@usableFromInline`, not private, only so that `withLock` can be inlined: a
/// caller's code specialised for its `Value` then locks with no generic call, nor a look-up of
/// the metadata of its `Value` and its closure's result, per access.)
@usableFromInline
package final class LockedValue<Value: Sendable>: @unchecked Sendable {
  @usableFromInline let lock = NSLock()
  @usableFromInline var value: Value

  /// Wraps `initial`.
  package init(_ initial: Value) {
    self.value = initial
  }

  /// Runs `body` with exclusive access to the value.
  @inlinable
  package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
