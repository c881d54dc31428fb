import Dispatch

/// Runs CPU-bound `work` off Swift's cooperative pool, one piece of work at a time, at a low
/// priority: seconds of synchronous work on the pool's two threads would hold up every other
/// test's async code in the process, and their deadline checks with it. `work` returns what
/// it found; the test asserts on it (issues are recorded from the test's own task).
func runOffThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    offThePoolQueue.async { continuation.resume(returning: work()) }
  }
}

/// The one serial queue such work shares.
private let offThePoolQueue = DispatchQueue(label: "cepis.tests.off-the-pool", qos: .utility)
