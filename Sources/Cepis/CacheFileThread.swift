import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The thread a file cache's work runs on, one closure at a time in the order given: off
/// Swift's cooperative pool (a busy file may make a statement wait) and at a lower scheduling
/// priority than the program's own threads.
///
/// A bulk run's answers are written to the file while the run goes on. On a machine whose
/// cores the run already keeps busy (its own rows, the network, a local server), a writer at
/// the same priority takes its CPU from the run's critical path; at a lower priority it takes
/// what the run leaves idle, and the write-behind backlog
/// (``AddressCache/entriesBehind``) lets it fall behind until then. Measured on two cores, a
/// first `cepis enrich` of 300,000 CEPs into a fresh file ran at 0.83× of `--no-cache`
/// with the writer at the same priority and a backlog of 32,000 answers, 0.92–1.00× with
/// this thread (nice 10) and 150,000 (interleaved A/B, medians). Reads run here too, so a
/// file read waits behind the program's own work only when every core is busy; a repeated
/// single lookup is served from memory (``AddressCache/frontCapacity``).
///
/// The thread starts with the first closure and ends once its owner is gone and the
/// closures given before are done.
final class CacheFileThread: Sendable {
  /// The nice value of the thread on Linux (glibc; a process may always lower its own
  /// threads' priority, never raise it back); on Apple platforms the thread runs at the
  /// utility quality of service.
  static let niceValue: Int32 = 10

  private struct State {
    var pending: [@Sendable () -> Void] = []
    var started = false
    var stopping = false
  }

  private let box: Box

  /// The state the thread shares with its owner: the thread holds the box, never the owner.
  private final class Box: @unchecked Sendable {
    // `state` is only touched with `condition` locked.
    let condition = NSCondition()
    var state = State()
    let name: String

    init(name: String) { self.name = name }

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
        // `who` 0 is the calling thread on Linux (the nice value is per thread). Never raised:
        // a thread started by a program that runs at a lower priority stays there.
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        if errno == 0 && current < CacheFileThread.niceValue {
          _ = setpriority(which, 0, CacheFileThread.niceValue)
        }
      #endif
      while true {
        condition.lock()
        while state.pending.isEmpty && !state.stopping { condition.wait() }
        if state.pending.isEmpty {
          condition.unlock()
          return
        }
        let work = state.pending.removeFirst()
        condition.unlock()
        work()
      }
    }
  }

  init(name: String) { box = Box(name: name) }

  deinit {
    box.condition.lock()
    box.state.stopping = true
    box.condition.signal()
    box.condition.unlock()
  }

  /// Runs `work` on the thread, after every closure given before it.
  func async(_ work: @escaping @Sendable () -> Void) {
    let box = self.box
    box.condition.lock()
    box.state.pending.append(work)
    let start = !box.state.started
    box.state.started = true
    box.condition.signal()
    box.condition.unlock()
    guard start else { return }
    let thread = Thread { box.run() }
    thread.name = box.name
    #if canImport(Darwin)
      thread.qualityOfService = .utility
    #endif
    thread.start()
  }

  /// Runs `work` on the thread `delay` from now (after what was given before it then).
  func asyncAfter(_ delay: DispatchTimeInterval, _ work: @escaping @Sendable () -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in async(work) }
  }
}
