import CepisSupport
import Foundation
import Testing

@testable import Cepis

#if canImport(Glibc)
  import Glibc
#endif

@Suite("LowPriorityThread: the file cache's thread, and the tests' off the pool")
struct LowPriorityThreadTests {
  @Test("closures run one at a time, in the order each caller gave them, on one thread")
  func order() async throws {
    let thread = LowPriorityThread(name: "cepis-test-order", niceValue: AddressCache.fileThreadNice)
    let ran = LockedValue<[(producer: Int, sequence: Int)]>([])
    let threads = LockedValue<Set<String>>([])
    let running = LockedValue(0)
    let overlapped = LockedValue(false)
    let producers = 4
    let perProducer = 2_500
    await withTaskGroup(of: Void.self) { group in
      for producer in 0..<producers {
        group.addTask {
          for sequence in 0..<perProducer {
            thread.async {
              if running.withLock({ count -> Int in
                count += 1
                return count
              }) > 1 {
                overlapped.withLock { $0 = true }
              }
              _ = threads.withLock { $0.insert(String(describing: pthread_self())) }
              ran.withLock { $0.append((producer, sequence)) }
              running.withLock { $0 -= 1 }
            }
          }
        }
      }
    }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      thread.async { continuation.resume() }
    }
    let order = ran.withLock { $0 }
    #expect(order.count == producers * perProducer)
    for producer in 0..<producers {
      let sequences = order.filter { $0.producer == producer }.map(\.sequence)
      #expect(sequences == Array(0..<perProducer))
    }
    #expect(threads.withLock { $0.count } == 1)
    #expect(!overlapped.withLock { $0 })
  }

  @Test("a closure given a delay runs no sooner than the delay")
  func delayed() async throws {
    let thread = LowPriorityThread(name: "cepis-test-delay", niceValue: AddressCache.fileThreadNice)
    let started = Date()
    let elapsed: TimeInterval = await withCheckedContinuation { continuation in
      thread.asyncAfter(.milliseconds(50)) {
        continuation.resume(returning: Date().timeIntervalSince(started))
      }
    }
    #expect(elapsed >= 0.05)
  }

  #if canImport(Glibc)
    /// The names of this process's threads, from `/proc/self/task/*/comm`.
    static func threadNames() throws -> [String] {
      let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
      return tasks.compactMap {
        try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
          .trimmingCharacters(in: .whitespacesAndNewlines)
      }
    }

    @Test(
      "on Linux the file cache's thread runs at nice 10 or lower priority, and ends with its owner")
    func priorityAndEnd() async throws {
      // comm holds 15 bytes: a name of this test's own.
      let name = "cft-\(UInt32.random(in: 0..<UInt32.max))"
      var thread: LowPriorityThread? = LowPriorityThread(
        name: name, niceValue: AddressCache.fileThreadNice)
      #expect(try !Self.threadNames().contains(name))
      let nice: Int32 = await withCheckedContinuation { continuation in
        thread?.async {
          continuation.resume(returning: getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
        }
      }
      #expect(nice >= AddressCache.fileThreadNice)
      #expect(try Self.threadNames().contains(name))
      thread = nil
      let deadline = Date().addingTimeInterval(5)
      while try Self.threadNames().contains(name), Date() < deadline {
        try await Task.sleep(for: .milliseconds(10))
      }
      #expect(try !Self.threadNames().contains(name))
    }
  #endif
}
