import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A thread of its own that runs closures one at a time, in the order given, at a lower
/// scheduling priority than the program's own threads: off Swift's cooperative pool (a
/// closure may block, as a busy file makes a statement wait) and off Dispatch's threads,
/// whose QoS does not lower a thread's priority on Linux.
///
/// A file cache's work runs on one (`AddressCache`, nice 10; why is told at
/// `AddressCache.fileThreadNice`); so do the test suite's CPU-bound tests (nice 19,
/// `runOffThePool` in `CepisTestSupport`).
///
/// The thread starts with the first closure and ends once its owner is gone and the
/// closures given before are done.
package final class LowPriorityThread: Sendable {
  private let box: Box

  /// The state the thread shares with its owner: the thread holds the box, never the owner.
  ///
  /// `@unchecked Sendable` is sound: `pending`, `started` and `stopping` are only touched with
  /// `condition` locked; the other fields are constants.
  private final class Box: @unchecked Sendable {
    let condition = NSCondition()
    var pending: [@Sendable () -> Void] = []
    var started = false
    var stopping = false
    let name: String
    let niceValue: Int32

    init(name: String, niceValue: Int32) {
      self.name = name
      self.niceValue = niceValue
    }

    func run() {
      #if canImport(Glibc)
        // Foundation's `Thread.name` does not reach the system on Linux (`top -H`, `perf`):
        // the thread names itself, in the 15 bytes the system keeps.
        let comm = open("/proc/thread-self/comm", O_WRONLY)
        if comm >= 0 {
          let bytes = Array(name.utf8.prefix(15))
          _ = write(comm, bytes, bytes.count)
          close(comm)
        }
        // `who` 0 is the calling thread on Linux (the nice value is per thread). Never raised
        // back: a process may always lower its threads' priority, not raise it, and a thread
        // started by a program that already runs at a lower priority stays there.
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        if errno == 0 && current < niceValue { _ = setpriority(which, 0, niceValue) }
      #endif
      while true {
        condition.lock()
        while pending.isEmpty && !stopping { condition.wait() }
        // Everything given so far, in order; what is given meanwhile waits for the next turn.
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        condition.unlock()
        if batch.isEmpty { return }
        for work in batch { work() }
      }
    }
  }

  /// A thread named `name` (the system keeps its first 15 bytes) that runs at nice
  /// `niceValue` on Linux (glibc), or higher if its creator's is; on Apple platforms at the
  /// utility quality of service (background from nice 19, user-initiated at nice 0 or less).
  package init(name: String, niceValue: Int32) { box = Box(name: name, niceValue: niceValue) }

  deinit {
    box.condition.lock()
    box.stopping = true
    box.condition.signal()
    box.condition.unlock()
  }

  /// Runs `work` on the thread, after every closure given before it.
  package func async(_ work: @escaping @Sendable () -> Void) {
    let box = self.box
    box.condition.lock()
    box.pending.append(work)
    let start = !box.started
    box.started = true
    box.condition.signal()
    box.condition.unlock()
    guard start else { return }
    let thread = Thread { box.run() }
    thread.name = box.name
    #if canImport(Darwin)
      thread.qualityOfService =
        box.niceValue >= 19 ? .background : box.niceValue > 0 ? .utility : .userInitiated
    #endif
    thread.start()
  }

  /// Runs `work` on the thread `delay` from now (after what was given before it then).
  package func asyncAfter(_ delay: DispatchTimeInterval, _ work: @escaping @Sendable () -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in async(work) }
  }
}
