import BrazilianDocuments
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// `CEPTable` against `Dictionary<Int, Int32>`: seeded random look-ups, inserts, overwrites and
/// removals, compared step by step, with the whole contents compared now and then. Each key
/// pattern stresses the probing differently: a small key space (long probe runs, removals
/// shifting them back, growth from the smallest table), CEPs ending in `000` (the same low
/// digits), CEPs drawn from a range of consecutive ones, and CEPs anywhere in the valid range.
/// The count of displaced keys the table keeps is checked against one made slot by slot.
/// `slidingWindow` runs the table as the memo does over a file sorted by CEP. CI runs a bounded
/// number of operations per pattern; `CEPIS_CEP_TABLE_OPS` sets another
/// (`CEPIS_CEP_TABLE_OPS=20000000 swift test -c release -Xswiftc -enable-testing --filter
/// CEPTableModelTests`).
@Suite("CEP table against Dictionary")
struct CEPTableModelTests {
  static let operations =
    ProcessInfo.processInfo.environment["CEPIS_CEP_TABLE_OPS"].flatMap(Int.init) ?? 1_000_000

  enum Keys: String, CaseIterable, CustomStringConvertible, Sendable {
    case small
    case wholeTowns
    case consecutive
    case anywhere

    var description: String { rawValue }

    /// A key of this pattern from a random number.
    func key(_ random: UInt64) -> Int {
      switch self {
      // Multiples of 8: each key the first of a line, in eight blocks of 64 that a table of
      // a few blocks must share, so keys collide and probe on (61 keys 0…60 would fill one
      // block without a collision).
      case .small: Int(random % 61) * 8
      case .wholeTowns: Int(random % 5_000) * 1_000 + 1_000_000
      case .consecutive: 20_000_000 + Int(random % 40_000)
      case .anywhere: Int(random % 100_000_000)
      }
    }

    /// The most keys held at once: removals keep the table near this size.
    var target: Int {
      switch self {
      case .small: 40
      case .wholeTowns: 3_000
      case .consecutive: 25_000
      case .anywhere: 30_000
      }
    }
  }

  @Test(arguments: Keys.allCases)
  func agreesWithDictionary(keys: Keys) async {
    // Seconds of synchronous work: off the cooperative pool, at a low priority.
    let failure = await runOffThePool { Self.check(keys) }
    #expect(failure == nil)
  }

  /// Runs the seeded sequence for `keys`; the first difference, or `nil`.
  static func check(_ keys: Keys) -> String? {
    var table = CEPTable()
    var reference: [Int: Int32] = [:]
    var random = SplitMix64(state: 0xCE9_7AB1E &+ UInt64(keys.target))
    var removals = 0
    var displacedRemovals = 0
    // Keys inserted lately: half the operations pick one, so that even in a sparse key space
    // look-ups find and removals remove.
    var recent: [Int] = []
    for step in 0..<operations {
      let fresh = keys.key(random.next())
      let cep =
        recent.isEmpty || random.next() % 2 == 0
        ? fresh : recent[Int(random.next() % UInt64(recent.count))]
      if recent.count < 4_096 { recent.append(fresh) } else { recent[step % 4_096] = fresh }
      let value = Int32(truncatingIfNeeded: Int64(bitPattern: random.next()))
      // Remove more often when above the target size, so that the table churns around it.
      let removeWeight: UInt64 = reference.count > keys.target ? 6 : 2
      let choice = random.next() % 12
      if choice < removeWeight {
        // Removals while some key sits past its home go through the backward shift (those
        // while none does stop at once: `slidingWindow`).
        if table.displacedCount > 0 { displacedRemovals += 1 }
        let got = table.removeValue(for: cep)
        let expected = reference.removeValue(forKey: cep)
        if expected != nil { removals += 1 }
        guard got == expected else {
          return
            "step \(step): remove \(cep) gave \(String(describing: got)), not \(String(describing: expected))"
        }
      } else if choice < 7 {
        let before = table.count
        let got = table.valueInserting(value, for: cep)
        let expected = reference[cep]
        if expected == nil { reference[cep] = value }
        guard got == expected else {
          return
            "step \(step): valueInserting for \(cep) gave \(String(describing: got)), not \(String(describing: expected))"
        }
        if got == nil && table.count != before + 1 { return "step \(step): count did not grow" }
      } else if choice < 9 {
        table.set(value, for: cep)
        reference[cep] = value
      } else {
        let got = table.value(for: cep)
        let expected = reference[cep]
        guard got == expected else {
          return
            "step \(step): value for \(cep) is \(String(describing: got)), not \(String(describing: expected))"
        }
      }
      guard table.count == reference.count else {
        return "step \(step): \(table.count) held, not \(reference.count)"
      }
      if step % 50_021 == 0 || (keys == .small && step % 97 == 0) {
        let contents = table.contents
        guard contents.count == reference.count,
          contents.allSatisfy({ reference[$0.cep] == $0.value })
        else { return "step \(step): the contents differ" }
        let counted = table.displacedKeysCounted
        guard table.displacedCount == counted else {
          return "step \(step): \(table.displacedCount) keys noted displaced, \(counted) are"
        }
      }
      if step.isMultiple(of: 100_003) {
        // Growth from a small table with what is held, as a fresh table does.
        var grown = CEPTable()
        for (cep, value) in reference { grown.set(value, for: cep) }
        guard grown.count == reference.count,
          reference.allSatisfy({ grown.value(for: $0.key) == $0.value })
        else { return "step \(step): a table grown from empty differs" }
      }
    }
    // The sequence must have exercised removal of held keys (the backward shift).
    guard removals > operations / 50 else { return "only \(removals) removals of held keys" }
    // …while keys sat past their homes (the backward shift; `slidingWindow` has removals
    // with none).
    guard displacedRemovals > operations / 50 else {
      return "only \(displacedRemovals) removals with a key displaced"
    }
    return nil
  }

  /// A file sorted by CEP through a memo of `window` CEPs: each CEP is inserted, and the one
  /// `window` CEPs before it removed (the oldest). Consecutive CEPs seldom collide, so most
  /// removals find no key displaced and skip the backward shift (the other patterns above
  /// shift). Each removed CEP is looked up after it goes, one held CEP at every step, and every
  /// held CEP and the count of displaced keys now and then, against the reference.
  @Test(arguments: [2_000, 100_000])
  func slidingWindow(window: Int) async {
    let failure = await runOffThePool { Self.slide(window: window) }
    #expect(failure == nil)
  }

  static func slide(window: Int) -> String? {
    var table = CEPTable()
    var reference: [Int: Int32] = [:]
    let first = 1_000_000
    var withNoneDisplaced = 0
    var withSomeDisplaced = 0
    for step in 0..<max(operations, 3 * window) {
      let cep = first + step
      guard table.valueInserting(Int32(truncatingIfNeeded: step), for: cep) == nil else {
        return "step \(step): \(cep) held before it was inserted"
      }
      reference[cep] = Int32(truncatingIfNeeded: step)
      if step >= window {
        let oldest = cep - window
        if table.displacedCount == 0 { withNoneDisplaced += 1 } else { withSomeDisplaced += 1 }
        guard table.removeValue(for: oldest) == reference.removeValue(forKey: oldest) else {
          return "step \(step): removing \(oldest) gave another value"
        }
        guard table.value(for: oldest) == nil else { return "step \(step): \(oldest) still held" }
        // A CEP inserted a while ago, displaced or not, is still found.
        let held = cep - (step * 7_919) % window
        guard table.value(for: held) == reference[held] else {
          return "step \(step): \(held) is not found"
        }
      }
      guard table.count == reference.count else {
        return "step \(step): \(table.count) held, not \(reference.count)"
      }
      if step % 50_021 == 0 {
        guard reference.allSatisfy({ table.value(for: $0.key) == $0.value }) else {
          return "step \(step): the contents differ"
        }
        let counted = table.displacedKeysCounted
        guard table.displacedCount == counted else {
          return "step \(step): \(table.displacedCount) keys noted displaced, \(counted) are"
        }
      }
    }
    // The shortcut was taken most of the time (seen: every time, at both sizes).
    guard withNoneDisplaced > withSomeDisplaced else {
      return "\(withNoneDisplaced) removals with no key displaced, \(withSomeDisplaced) with"
    }
    return nil
  }

  @Test("reserving room keeps every key; the largest CEP and zero are keys like any other")
  func reserveAndBounds() {
    var table = CEPTable(capacity: 3)
    for cep in [0, 99_999_999, 1_000, 70_000_000] { table.set(Int32(cep % 1_000), for: cep) }
    table.reserveCapacity(100_000)
    #expect(table.value(for: 0) == 0)
    #expect(table.value(for: 99_999_999) == 999)
    #expect(table.value(for: 1_000) == 0)
    #expect(table.value(for: 70_000_000) == 0)
    #expect(table.value(for: 1) == nil)
    #expect(table.count == 4)
  }
}
