import CepisSupport
import Foundation

/// The addresses and people a ``MockServer`` serves: the ground truth tests compare with.
///
/// ``sample`` holds a bundled, deterministic set of SAMPLE addresses (not DNE data: realistic
/// looking, fictitious where it matters) for all 27 states, plus the ``syntheticRange``: every
/// CEP in it whose value does not end in 9 exists and is generated on demand from its number.
public struct MockDataset: Sendable {
  /// The explicit addresses, keyed by the CEP's numeric value.
  let addresses: [Int: MockAddress]
  /// The explicit addresses' CSV rows (default column order, no line ending), by CEP value.
  let csvRows: [Int: [UInt8]]
  /// The explicit CEPs in the order they were defined.
  let orderedCEPs: [Int]
  /// The people served by the cpfhub.io routes.
  public let people: [MockPerson]
  private let peopleByCPF: [String: MockPerson]

  /// The synthetic CEP range, or `nil` for none.
  ///
  /// Every CEP `n` in the range with `n % 10 != 9` exists (so about 10% are not found), with
  /// fields derived from the number: `Rua Sintética <n / 10>`, `Bairro Sintético <…>`,
  /// `São Paulo`/`SP`/`3550308`, and a `geo` on two thirds of them. Explicit addresses win over
  /// synthetic ones. ``sample`` uses ``defaultSyntheticRange``, São Paulo state's range.
  public var syntheticRange: ClosedRange<Int>?

  /// The default synthetic range: `10000000...19999999`, inside São Paulo state's CEP range.
  public static let defaultSyntheticRange = 10_000_000...19_999_999

  /// Creates a dataset from addresses and people.
  public init(
    addresses: [MockAddress], people: [MockPerson] = [], syntheticRange: ClosedRange<Int>? = nil
  ) {
    var byValue: [Int: MockAddress] = [:]
    var rows: [Int: [UInt8]] = [:]
    var order: [Int] = []
    for address in addresses {
      guard let value = cepValue(address.cep) else { continue }
      var normalized = address
      normalized.cep = cepString(value)
      if byValue.updateValue(normalized, forKey: value) == nil { order.append(value) }
      var row: [UInt8] = []
      CSVField.appendRow(normalized.csvFields, to: &row)
      rows[value] = row
    }
    self.addresses = byValue
    self.csvRows = rows
    self.orderedCEPs = order
    self.people = people
    self.peopleByCPF = Dictionary(
      people.map { ($0.cpf, $0) }, uniquingKeysWith: { first, _ in first })
    self.syntheticRange = syntheticRange
  }

  /// The bundled sample: ≥ 300 SAMPLE addresses over the 27 states, the synthetic range
  /// ``defaultSyntheticRange`` and ≥ 20 fictitious people.
  public static let sample = MockDataset(
    addresses: SampleData.addresses(), people: SampleData.people(),
    syntheticRange: defaultSyntheticRange)

  /// The explicit (bundled or loaded) CEPs, unmasked, in definition order.
  public var sampleCEPs: [String] { orderedCEPs.map(cepString) }

  /// The explicit addresses in definition order.
  public var sampleAddresses: [MockAddress] { orderedCEPs.compactMap { addresses[$0] } }

  /// How many CEPs exist: explicit ones plus the existing synthetic ones.
  public var count: Int {
    guard let range = syntheticRange else { return addresses.count }
    let synthetic = syntheticCount(in: range)
    let overlap = addresses.keys.filter { range.contains($0) && $0 % 10 != 9 }.count
    return addresses.count + synthetic - overlap
  }

  private func syntheticCount(in range: ClosedRange<Int>) -> Int {
    // Values ≤ x ending in 9: (x + 1) / 10 (for x ≥ 0).
    let upper = range.upperBound
    let lower = range.lowerBound
    let nines = (upper + 1) / 10 - lower / 10
    return range.count - nines
  }

  /// The address of a CEP (8 digits or masked `01001-000`), or `nil` when it does not exist
  /// or is malformed.
  public func address(for cep: String) -> MockAddress? {
    guard let value = cepValue(cep) else { return nil }
    return address(forValue: value)
  }

  /// The address of the CEP with this numeric value.
  func address(forValue value: Int) -> MockAddress? {
    if let address = addresses[value] { return address }
    guard isSynthetic(value) else { return nil }
    return SyntheticAddress.address(value)
  }

  /// Whether the value is an existing synthetic CEP not overridden by an explicit address.
  func isSynthetic(_ value: Int) -> Bool {
    guard let range = syntheticRange else { return false }
    return range.contains(value) && value % 10 != 9 && addresses[value] == nil
  }

  /// Whether a CEP value exists.
  func exists(_ value: Int) -> Bool {
    addresses[value] != nil || isSynthetic(value)
  }

  /// The person with this CPF (11 digits), or `nil`.
  public func person(for cpf: String) -> MockPerson? { peopleByCPF[cpf] }

  /// Returns a copy with other people.
  public func withPeople(_ people: [MockPerson]) -> MockDataset {
    MockDataset(addresses: sampleAddresses, people: people, syntheticRange: syntheticRange)
  }
}
