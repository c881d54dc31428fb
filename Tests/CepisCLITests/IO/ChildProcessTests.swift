import CepisTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The child processes every CLI test starts: what they inherit and how their end is told.
@Suite("ChildProcess: the tests' own posix_spawn")
struct ChildProcessTests {
  /// With 1,500 extra descriptors open (Foundation's `Process.run()` crashed a test process with
  /// about 1,400), ten children start, each sees only its three standard streams, and each
  /// ends with the status it exited with.
  @Test func manyDescriptorsOpenNoneInherited() async throws {
    #if os(Linux)
      var limit = rlimit()
      getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
      let count = min(1_500, Int(limit.rlim_cur) - 200)
      try #require(count > 100, "descriptor limit \(limit.rlim_cur) is too low for this test")
      let opened = (0..<count).map { _ in open("/dev/null", O_RDONLY) }
      defer {
        for descriptor in opened where descriptor >= 0 { close(descriptor) }
      }
      #expect(opened.allSatisfy { $0 >= 0 })
      for round in 0..<10 {
        let output = Pipe()
        // The shell lists its own descriptors, then exits with the round's number.
        let child = try ChildProcess.spawn(
          URL(fileURLWithPath: "/bin/sh"),
          ["-c", "ls /proc/$$/fd; exit \(round)"],
          stdout: .pipe(output))
        let listing = String(
          decoding: await ChildProcess.readToEnd(output.fileHandleForReading), as: UTF8.self)
        #expect(try await child.termination() == .exited(Int32(round)))
        // The shell's descriptors: 0, 1, 2, and none of the 1,500 (numbers past 10 at most
        // belong to the shell itself, which moves a few up high; it never holds hundreds).
        let descriptors = listing.split(separator: "\n").compactMap { Int32($0) }
        #expect(Set([0, 1, 2]).isSubset(of: Set(descriptors)))
        #expect(descriptors.count < 8, "the child inherited \(descriptors.count) descriptors")
        let inherited = Set(descriptors).intersection(opened.filter { $0 > 20 })
        #expect(inherited.isEmpty, "the child holds \(inherited.count) of the test's descriptors")
      }
    #endif
  }

  /// A signal ends the child and is reported as such, with the shell's 128 + number status.
  @Test func signalledChild() async throws {
    let child = try ChildProcess.spawn(URL(fileURLWithPath: "/bin/sleep"), ["30"])
    #expect(child.exited() == nil)
    child.signal(SIGKILL)
    let ended = try await child.termination()
    #expect(ended == .signalled(SIGKILL))
    #expect(ended.status == 128 + SIGKILL)
    #expect(try await child.termination() == ended)
  }

  /// A missing executable is a thrown error naming the call, not a child that never ends.
  @Test func missingExecutable() throws {
    #expect(throws: ChildProcess.SpawnError.self) {
      try ChildProcess.spawn(URL(fileURLWithPath: "/nonexistent/cepis-\(UUID())"), [])
    }
  }
}
