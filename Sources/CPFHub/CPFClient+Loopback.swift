import Foundation

extension CPFClient {
  /// Whether `host` is a loopback name or address: `localhost`, `127.0.0.0/8` in strict
  /// dotted-quad form, or `::1` (also written in full, or IPv4-mapped `::ffff:127.x.y.z`).
  static func isLoopback(host: String) -> Bool {
    var name = host.lowercased()
    if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
    if name.hasSuffix(".") { name.removeLast() }
    if name == "localhost" { return true }
    if let octets = ipv4(name) { return octets[0] == 127 }
    if let groups = ipv6(name) {
      if groups == [0, 0, 0, 0, 0, 0, 0, 1] { return true }
      // IPv4-mapped: ::ffff:127.0.0.1
      return groups[0..<5].allSatisfy { $0 == 0 } && groups[5] == 0xFFFF && groups[6] >> 8 == 127
    }
    return false
  }

  private static func ipv4(_ text: String) -> [Int]? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4 else { return nil }
    var octets: [Int] = []
    for part in parts {
      guard (1...3).contains(part.utf8.count),
        part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
        part.utf8.count == 1 || part.first != "0",
        let value = Int(part), value <= 255
      else { return nil }
      octets.append(value)
    }
    return octets
  }

  private static func ipv6(_ text: String) -> [Int]? {
    guard text.contains(":"), !text.contains("%") else { return nil }
    func groups(_ part: Substring) -> [Int]? {
      if part.isEmpty { return [] }
      var result: [Int] = []
      let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
      for (index, piece) in pieces.enumerated() {
        if index == pieces.count - 1, piece.contains("."), let v4 = ipv4(String(piece)) {
          result += [v4[0] << 8 | v4[1], v4[2] << 8 | v4[3]]
          continue
        }
        guard (1...4).contains(piece.utf8.count), let value = Int(piece, radix: 16) else {
          return nil
        }
        result.append(value)
      }
      return result
    }
    let halves = text.components(separatedBy: "::")
    switch halves.count {
    case 1:
      guard let all = groups(Substring(text)), all.count == 8 else { return nil }
      return all
    case 2:
      guard let head = groups(Substring(halves[0])), let tail = groups(Substring(halves[1])),
        head.count + tail.count < 8
      else { return nil }
      return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    default:
      return nil
    }
  }
}
