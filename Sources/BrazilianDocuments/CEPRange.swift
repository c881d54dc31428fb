/// A span of CEP prefixes (the first five digits of a postal code) that the
/// Correios assign to one federative unit.
///
/// ```swift
/// for range in UF.cepRanges {
///   print(range.uf.rawValue, range.lowerBound, range.upperBound)  // SP 01000 19999 …
/// }
/// ```
public struct CEPRange: Sendable, Hashable {
  /// The unit that the prefixes belong to.
  public let uf: UF
  /// The prefixes covered, inclusive: `1000...19999` for São Paulo.
  public let prefixes: ClosedRange<Int>

  /// Creates a range; used to build ``UF/cepRanges-swift.type.property``.
  public init(_ uf: UF, _ prefixes: ClosedRange<Int>) {
    self.uf = uf
    self.prefixes = prefixes
  }

  /// The first prefix, zero-padded to five digits (`"01000"`).
  public var lowerBound: String { Self.padded(prefixes.lowerBound) }
  /// The last prefix, zero-padded to five digits (`"19999"`).
  public var upperBound: String { Self.padded(prefixes.upperBound) }

  private static func padded(_ prefix: Int) -> String {
    let digits = String(prefix)
    return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
  }
}

extension UF {
  /// The Correios CEP ranges by five-digit prefix, in ascending order.
  ///
  /// Some units have two ranges (AM, DF, GO). Prefixes outside every range
  /// (00000–00999, and 78900–78999 between MT and MS) belong to no unit here,
  /// so ``init(cep:)`` returns `nil` for them.
  public static let cepRanges: [CEPRange] = [
    CEPRange(.sp, 1_000...19_999),
    CEPRange(.rj, 20_000...28_999),
    CEPRange(.es, 29_000...29_999),
    CEPRange(.mg, 30_000...39_999),
    CEPRange(.ba, 40_000...48_999),
    CEPRange(.se, 49_000...49_999),
    CEPRange(.pe, 50_000...56_999),
    CEPRange(.al, 57_000...57_999),
    CEPRange(.pb, 58_000...58_999),
    CEPRange(.rn, 59_000...59_999),
    CEPRange(.ce, 60_000...63_999),
    CEPRange(.pi, 64_000...64_999),
    CEPRange(.ma, 65_000...65_999),
    CEPRange(.pa, 66_000...68_899),
    CEPRange(.ap, 68_900...68_999),
    CEPRange(.am, 69_000...69_299),
    CEPRange(.rr, 69_300...69_399),
    CEPRange(.am, 69_400...69_899),
    CEPRange(.ac, 69_900...69_999),
    CEPRange(.df, 70_000...72_799),
    CEPRange(.go, 72_800...72_999),
    CEPRange(.df, 73_000...73_699),
    CEPRange(.go, 73_700...76_799),
    CEPRange(.ro, 76_800...76_999),
    CEPRange(.to, 77_000...77_999),
    CEPRange(.mt, 78_000...78_899),
    CEPRange(.ms, 79_000...79_999),
    CEPRange(.pr, 80_000...87_999),
    CEPRange(.sc, 88_000...89_999),
    CEPRange(.rs, 90_000...99_999),
  ]

  /// The CEP ranges of this unit, from ``cepRanges-swift.type.property``.
  public var cepRanges: [CEPRange] {
    Self.cepRanges.filter { $0.uf == self }
  }

  /// The unit a CEP belongs to, looked up offline in ``cepRanges-swift.type.property``.
  ///
  /// Accepts eight digits, optionally written `01001-000` or `01.001-000`, with
  /// surrounding whitespace. Returns `nil` for anything else, and for a prefix that
  /// no range covers.
  ///
  /// ```swift
  /// UF(cep: "01001-000")  // .sp
  /// UF(cep: "70040010")   // .df
  /// UF(cep: "00500-000")  // nil
  /// ```
  public init?(cep: String) {
    guard let prefix = Self.cepPrefix(cep.utf8) else { return nil }
    self.init(cepPrefix: prefix)
  }

  /// The unit a five-digit CEP prefix (`0...99_999`) belongs to, or `nil`.
  public init?(cepPrefix prefix: Int) {
    // Binary search: the table is sorted and its ranges do not overlap.
    let ranges = Self.cepRanges
    var low = 0
    var high = ranges.count - 1
    while low <= high {
      let middle = (low + high) / 2
      let range = ranges[middle].prefixes
      if prefix < range.lowerBound {
        high = middle - 1
      } else if prefix > range.upperBound {
        low = middle + 1
      } else {
        self = ranges[middle].uf
        return
      }
    }
    return nil
  }

  /// The five-digit prefix of a well-formed CEP, or `nil`.
  private static func cepPrefix(_ bytes: String.UTF8View) -> Int? {
    var digits = 0
    var prefix = 0
    var started = false
    var ended = false
    var previous: UInt8 = 0
    for byte in bytes {
      let isSpace = byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
      if isSpace {
        if started { ended = true }
        previous = byte
        continue
      }
      if ended { return nil }
      started = true
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        if digits < 5 { prefix = prefix * 10 + Int(byte - UInt8(ascii: "0")) }
        digits += 1
        if digits > 8 { return nil }
      case UInt8(ascii: "-"):
        guard digits == 5, previous != UInt8(ascii: "-") else { return nil }
      case UInt8(ascii: "."):
        guard digits == 2, previous != UInt8(ascii: ".") else { return nil }
      default:
        return nil
      }
      previous = byte
    }
    return digits == 8 ? prefix : nil
  }
}
