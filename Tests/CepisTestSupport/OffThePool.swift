import CepisSupport
import Foundation

/// Runs CPU-bound `work` off Swift's cooperative pool and off Dispatch's threads, one piece
/// of work at a time, on a thread of its own at the lowest scheduling priority (on Linux, a
/// nice value of 19): seconds of synchronous work on the pool's two threads would hold up
/// every other test's async code in the process, and beside them on two cores it starves the
/// latency-bound tests (a 0.3 s deadline that fires seconds late). `work` returns what it found;
/// the test asserts on it (issues are recorded from the test's own task).
///
/// Every model-based and seeded test of the suite goes through here, so at most one of them
/// runs at a time.
public func runOffThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    offThePoolThread.async { continuation.resume(returning: work()) }
  }
}

/// The one thread such work shares, for the life of the test process.
private let offThePoolThread = LowPriorityThread(name: "cepis-tests-off", niceValue: 19)
