// Fuzz target: Address and Health decoding, and the batch answer decoder, must either decode
// or throw — never crash, and never yield an address whose CEP is not 8 digits. The fast reader
// of cep.is answers must either step aside or agree with JSONDecoder exactly; the packed batch
// decoder must give what the CSVReader-based one gives, or refuse what it refuses.
import Foundation

@testable import Cepis

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let body = Data(UnsafeBufferPointer(start: data, count: size))
  if let address = try? JSONDecoder().decode(Address.self, from: body) {
    precondition(
      address.cep.utf8.count == 8 && address.cep.utf8.allSatisfy { $0 >= 48 && $0 <= 57 })
  }
  if let fast = Address.fastCepisAnswer(body) {
    let decoder = JSONDecoder()
    decoder.userInfo[Address.fromCepisKey] = true
    precondition(fast == (try? decoder.decode(Address.self, from: body)))
  }
  _ = try? JSONDecoder().decode(Health.self, from: body)
  let chunk = ["01001000", "20040002", "70040010"]
  let reference = try? Client.decodeBatchRowsWithReader(body, chunk: chunk)
  precondition((try? Client.decodeBatchRows(body, chunk: chunk)) == reference)
  // The bulk engine's form: positions by the chunk's order before any table.
  precondition(
    (try? Client.decodeBatchRows(body, numbers: [1_001_000, 20_040_002, 70_040_010])) == reference)
  if let rows = reference {
    precondition(rows.count == chunk.count)
    for (cep, address) in zip(chunk, rows) {
      if let address { precondition(address.cep == cep && !address.localidade.isEmpty) }
    }
  }
  return 0
}
