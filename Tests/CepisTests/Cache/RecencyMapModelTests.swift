import Foundation
import Testing

@testable import Cepis

/// `RecencyMap`, the memory cache's LRU, against a plain reference: an array of keys in
/// recency order and a dictionary, over small and larger capacities and seeded random
/// operations. `CEPIS_CACHE_MODEL_OPS` scales the run (default 50,000 in all, shared by the
/// capacities; millions for a soak).
@Suite("RecencyMap against a reference model")
struct RecencyMapModelTests {
  struct Reference {
    let capacity: Int
    var order: [Int] = []
    var values: [Int: Int] = [:]

    mutating func value(for key: Int) -> Int? {
      guard let value = values[key] else { return nil }
      order.removeAll { $0 == key }
      order.append(key)
      return value
    }

    mutating func set(_ value: Int, for key: Int) -> Int? {
      guard capacity > 0 else { return nil }
      if values[key] != nil {
        values[key] = value
        order.removeAll { $0 == key }
        order.append(key)
        return nil
      }
      var forgotten: Int?
      if order.count == capacity {
        let oldest = order.removeFirst()
        values[oldest] = nil
        forgotten = oldest
      }
      values[key] = value
      order.append(key)
      return forgotten
    }
  }

  /// SplitMix64: the same sequence on every platform for a seed.
  struct Generator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }

  static var operations: Int {
    ProcessInfo.processInfo.environment["CEPIS_CACHE_MODEL_OPS"].flatMap { Int($0) } ?? 50_000
  }

  @Test("every operation agrees with the reference", arguments: [0, 1, 3, 64])
  func agreesWithReference(capacity: Int) {
    for seed in [UInt64(capacity) &+ 1] {
      var generator = Generator(state: seed &* 1_000_003 &+ UInt64(capacity))
      var map = RecencyMap<Int>(capacity: capacity)
      var reference = Reference(capacity: capacity)
      let keySpace = max(2, capacity * 2 + 1)
      let operations = max(1, Self.operations / 4)
      for step in 0..<operations {
        let key = Int.random(in: 0..<keySpace, using: &generator)
        switch Int.random(in: 0..<3, using: &generator) {
        case 0:
          let got = map.value(for: key)
          let expected = reference.value(for: key)
          guard got == expected else {
            Issue.record(
              "seed \(seed) step \(step): value(\(key)) \(String(describing: got)) ≠ \(String(describing: expected))"
            )
            return
          }
        case 1:
          guard map.peek(key) == reference.values[key] else {
            Issue.record("seed \(seed) step \(step): peek(\(key)) differs")
            return
          }
        default:
          let value = step
          let got = map.set(value, for: key)
          let expected = reference.set(value, for: key)
          guard got == expected else {
            Issue.record(
              "seed \(seed) step \(step): set(\(key)) forgot \(String(describing: got)) ≠ \(String(describing: expected))"
            )
            return
          }
        }
        if step % 997 == 0 || step == operations - 1 {
          guard map.keysOldestFirst == reference.order, map.count == reference.order.count else {
            Issue.record("seed \(seed) step \(step): order differs")
            return
          }
        }
      }
    }
  }
}
