import BrazilianDocuments
import CepisSupport
import Testing

@testable import Cepis

/// `RowPump` (the buffer between a `lookups` stream's reader task and its engine) against a
/// plain reference: the input's rows, in order, and a count of the rows taken and not yet
/// given back. A real reader task offers the rows while the test, as the engine, takes them
/// and gives credit back at a seeded pace.
@Suite("RowPump against a plain reference")
struct RowPumpModelTests {
  struct Broke: Error, Equatable {}

  static var rowsPerCase: Int { 100_000 }

  /// The reader's side, as the engine's reader task does it: offers `rows` in order, waiting
  /// for credit when the pump is full (`beforeEach` runs before each offer). `false` when the
  /// pump stopped the reading.
  static func offer(
    _ rows: Range<Int>, to pump: RowPump<Int>, beforeEach: @Sendable () -> Void = {}
  ) async -> Bool {
    for row in rows {
      beforeEach()
      switch pump.offer(row) {
      case .more: continue
      case .full: if await !pump.waitForCredit() { return false }
      case .stopped: return false
      }
    }
    return true
  }

  @Test(arguments: [(1, 1), (2, 2), (7, 3), (64, 4), (1_000, 5)])
  func everyRowOnceInOrderNeverMoreThanTheReadAheadOut(readAhead: Int, seed: UInt64) async {
    let count = Self.rowsPerCase
    // Half the cases end with the input throwing after its last row.
    let throwsAtEnd = seed.isMultiple(of: 2)
    let mailbox = ChunkMailbox()
    let pump = RowPump<Int>(readAhead: readAhead, wake: mailbox)
    let reader = Task.detached {
      if await Self.offer(0..<count, to: pump) { pump.end(throwsAtEnd ? Broke() : nil) }
    }
    pump.attach(reader: reader)

    // The reference: the next row expected, and the rows taken and not yet given back.
    var expected = 0
    var outstanding = 0
    var owed = 0
    var worstOutstanding = 0
    var outOfOrder: [String] = []
    var random = SplitMix64(state: seed &* 0x9E37_79B9)
    var buffer: [Int] = []
    var ending: (ended: Bool, error: (any Error)?) = (false, nil)
    while true {
      buffer.removeAll(keepingCapacity: true)
      // Everything owed goes back with a take, as the engine gives it.
      ending = pump.take(into: &buffer, givingBack: owed)
      outstanding -= owed
      owed = 0
      if ending.ended {
        #expect(buffer.isEmpty, "rows handed over with the end")
        break
      }
      for row in buffer {
        if row != expected && outOfOrder.count < 5 {
          outOfOrder.append("row \(row) where \(expected) was due")
        }
        expected = row + 1
      }
      outstanding += buffer.count
      worstOutstanding = max(worstOutstanding, outstanding)
      // Answer some of the rows held (all of them when nothing more could come).
      let answered =
        buffer.isEmpty && outstanding > 0
        ? outstanding : Int(random.next() % UInt64(outstanding + 1))
      owed = answered
      if buffer.isEmpty && answered == 0 {
        // Nothing to take yet: wait for the reader, as the engine waits for rows.
        await mailbox.wait()
      }
    }
    #expect(outOfOrder.isEmpty, "\(outOfOrder)")
    #expect(expected == count)
    #expect(worstOutstanding <= readAhead)
    #expect((ending.error as? Broke != nil) == throwsAtEnd)
    await reader.value
  }

  @Test("stopping wakes a reader that waits for credit, and it reads no more")
  func stopEndsAWaitingReader() async {
    let mailbox = ChunkMailbox()
    let pump = RowPump<Int>(readAhead: 3, wake: mailbox)
    let offered = LockedValue(0)
    let reader = Task.detached {
      _ = await Self.offer(0..<100, to: pump) { offered.withLock { $0 += 1 } }
    }
    pump.attach(reader: reader)
    var buffer: [Int] = []
    while buffer.count < 3 {
      await mailbox.wait()
      var more: [Int] = []
      _ = pump.take(into: &more, givingBack: 0)
      buffer += more
    }
    pump.stop()
    await reader.value
    #expect(buffer == [0, 1, 2])
    #expect(offered.withLock { $0 } == 3)
  }
}
