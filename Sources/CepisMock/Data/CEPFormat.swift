import BrazilianDocuments

/// The numeric value of a CEP written as 8 digits or `NNNNN-NNN`, or `nil` if malformed.
///
/// The mock parses and formats CEPs with code of its own, not the client's (`Cepis`'s
/// `normalizeCEP` and formatter): a server that shares the client's code cannot catch the
/// client's mistakes. It reads the wire strictly, as cep.is does.
func cepValue(_ text: some StringProtocol) -> Int? { cepValue(utf8: text.utf8) }

/// The value of a CEP given as UTF-8 bytes (see ``cepValue(_:)``).
func cepValue(utf8: some Collection<UInt8>) -> Int? {
  let count = utf8.count
  guard count == 8 || count == 9 else { return nil }
  var value = 0
  var digits = 0
  for (offset, byte) in utf8.enumerated() {
    if count == 9 && offset == 5 {
      guard byte == UInt8(ascii: "-") else { return nil }
      continue
    }
    guard byte >= 48 && byte <= 57 else { return nil }
    value = value * 10 + Int(byte - 48)
    digits += 1
  }
  return digits == 8 ? value : nil
}

/// Eight digits, zero-padded.
func cepString(_ value: Int) -> String {
  var bytes = [UInt8](repeating: 48, count: 8)
  var rest = value
  for index in stride(from: 7, through: 0, by: -1) {
    bytes[index] = UInt8(48 + rest % 10)
    rest /= 10
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// The masked form `NNNNN-NNN`.
func maskedCEP(_ cep: String) -> String {
  guard cep.utf8.count == 8 else { return cep }
  return String(cep.prefix(5)) + "-" + String(cep.suffix(3))
}

/// Whether `cpf` is 11 ASCII digits making a valid CPF (BrazilianDocuments' rules): the
/// cpfhub.io routes take digits only, never a masked CPF.
func isValidCPF(_ cpf: String) -> Bool {
  cpf.utf8.count == 11 && cpf.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && CPF.isValid(cpf)
}

/// Appends the 8-digit (or masked) CEP of `value`.
func appendCEP(_ value: Int, masked: Bool, to out: inout [UInt8]) {
  let digits = asciiDigits(value, count: 8)
  withUnsafeBytes(of: digits.littleEndian) { bytes in
    if masked {
      out.append(contentsOf: bytes[0..<5])
      out.append(UInt8(ascii: "-"))
      out.append(contentsOf: bytes[5..<8])
    } else {
      out.append(contentsOf: bytes)
    }
  }
}

/// Appends a non-negative integer in decimal.
func appendDecimal(_ value: Int, to out: inout [UInt8]) {
  let value = max(value, 0)
  guard value < 100_000_000 else {
    out.append(contentsOf: String(value).utf8)
    return
  }
  var count = 1
  var rest = value / 10
  while rest > 0 {
    count += 1
    rest /= 10
  }
  withUnsafeBytes(of: asciiDigits(value, count: count).littleEndian) { bytes in
    out.append(contentsOf: bytes[0..<count])
  }
}

/// The last `count` (at most 8) decimal digits of `value` as ASCII, the first digit in the
/// lowest byte: dividing by the constant 10 (a multiplication), not by a power of ten held in a
/// variable, as the mock's CSV rows are built a million at a time in the benchmarks.
private func asciiDigits(_ value: Int, count: Int) -> UInt64 {
  var word: UInt64 = 0
  var rest = UInt64(value)
  for _ in 0..<count {
    word = word << 8 | (48 + rest % 10)
    rest /= 10
  }
  return word
}
