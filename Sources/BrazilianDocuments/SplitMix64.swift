/// The SplitMix64 generator (Steele, Lea, Flood 2014): tiny, fast and seedable — the one
/// generator behind every reproducible draw in this package (CepisMock's chaos and synthetic
/// data, property tests, benchmarks), so a seed names the same sequence everywhere.
///
/// `package`: a test fixture's tool, not API. Users seed ``CPF/random(region:using:)`` and
/// ``CNPJ/random(alphanumeric:using:)`` with any `RandomNumberGenerator` of their own.
///
/// ```swift
/// var generator = SplitMix64(state: 7)
/// let cpf = CPF.random(using: &generator)
/// ```
package struct SplitMix64: RandomNumberGenerator, Sendable {
  /// The generator's state; the seed.
  package var state: UInt64

  /// A generator seeded with `state`.
  package init(state: UInt64) {
    self.state = state
  }

  /// The next 64 random bits.
  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var value = state
    value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
    value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
    return value ^ (value >> 31)
  }
}
