import Foundation

/// Runs CPU-bound `work` off Swift's cooperative pool and off Dispatch's threads, one piece
/// of work at a time, on a thread of its own at the lowest scheduling priority (on Linux, a
/// nice value of 19): seconds of synchronous work on the pool's two threads would hold up
/// every other test's async code in the process, and beside them on two cores it starves the
/// latency-bound tests (a 0.3 s deadline that fires after 7 s). `work` returns what it found;
/// the test asserts on it (issues are recorded from the test's own task).
///
/// Every model-based and seeded test of the suite goes through here, so at most one of them
/// runs at a time.
func runOffThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    OffThePoolThread.shared.enqueue { continuation.resume(returning: work()) }
  }
}

/// The one thread such work shares: a queue of closures, run in order.
private final class OffThePoolThread: @unchecked Sendable {
  static let shared = OffThePoolThread()

  // `pending` is only touched with `condition` locked.
  private let condition = NSCondition()
  private var pending: [@Sendable () -> Void] = []

  private init() {
    let thread = Thread { [self] in run() }
    thread.name = "cepis.tests.off-the-pool"
    thread.start()
  }

  func enqueue(_ work: @escaping @Sendable () -> Void) {
    condition.lock()
    pending.append(work)
    condition.signal()
    condition.unlock()
  }

  private func run() {
    #if os(Linux)
      // `who` 0 is the calling thread on Linux; a process may always raise its own nice value.
      _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
    #endif
    while true {
      condition.lock()
      while pending.isEmpty { condition.wait() }
      let work = pending.removeFirst()
      condition.unlock()
      work()
    }
  }
}
