import CepisSupport
import Foundation
import Testing

@testable import CepisMock

extension MockTests {
  @Suite struct DatasetTests {
    let dataset = MockDataset.sample

    static let ufRanges: [String: [ClosedRange<Int>]] = [
      "SP": [1_000_000...19_999_999], "RJ": [20_000_000...28_999_999],
      "ES": [29_000_000...29_999_999], "MG": [30_000_000...39_999_999],
      "BA": [40_000_000...48_999_999], "SE": [49_000_000...49_999_999],
      "PE": [50_000_000...56_999_999], "AL": [57_000_000...57_999_999],
      "PB": [58_000_000...58_999_999], "RN": [59_000_000...59_999_999],
      "CE": [60_000_000...63_999_999], "PI": [64_000_000...64_999_999],
      "MA": [65_000_000...65_999_999], "PA": [66_000_000...68_899_999],
      "AP": [68_900_000...68_999_999], "AM": [69_000_000...69_299_999, 69_400_000...69_899_999],
      "RR": [69_300_000...69_399_999], "AC": [69_900_000...69_999_999],
      "DF": [70_000_000...72_799_999, 73_000_000...73_699_999],
      "GO": [72_800_000...72_999_999, 73_700_000...76_799_999],
      "TO": [77_000_000...77_999_999], "MT": [78_000_000...78_899_999],
      "RO": [76_800_000...76_999_999], "MS": [79_000_000...79_999_999],
      "PR": [80_000_000...87_999_999], "SC": [88_000_000...89_999_999],
      "RS": [90_000_000...99_999_999],
    ]

    @Test func sampleCoversAllStates() throws {
      let addresses = dataset.sampleAddresses
      #expect(addresses.count >= 300)
      #expect(Set(addresses.map(\.cep)).count == addresses.count)
      #expect(Set(addresses.map(\.uf)) == Set(Self.ufRanges.keys))
      for address in addresses {
        let value = try #require(Int(address.cep))
        let ranges = try #require(Self.ufRanges[address.uf])
        #expect(ranges.contains { $0.contains(value) }, "\(address.cep) outside \(address.uf)")
        #expect(address.ibge.count == 7 && address.ibge.allSatisfy(\.isNumber))
        #expect(!address.localidade.isEmpty)
      }
      let precisions = addresses.map { $0.geo?.precisao ?? "none" }
      #expect(Set(precisions) == ["logradouro", "localidade", "none"])
      #expect(addresses.contains { $0.logradouro.contains("\"") })
      #expect(addresses.contains { $0.complemento.contains(",") || $0.logradouro.contains(",") })
    }

    @Test func famousAddress() {
      let se = dataset.address(for: "01001-000")
      #expect(se?.logradouro == "Praça da Sé")
      #expect(se?.complemento == "lado ímpar")
      #expect(se?.bairro == "Sé")
      #expect(se?.localidade == "São Paulo")
      #expect(se?.ibge == "3550308")
      #expect(dataset.sampleCEPs.contains("01001000"))
    }

    @Test func syntheticRange() {
      #expect(dataset.syntheticRange == 10_000_000...19_999_999)
      #expect(dataset.address(for: "10000019") == nil)
      let address = dataset.address(for: "12345678")
      #expect(address?.logradouro == "Rua Sintética 1234567")
      #expect(address?.uf == "SP")
      #expect(dataset.address(for: "12345678") == address)
      // An explicit address wins over the synthetic one.
      #expect(dataset.address(for: "13010000")?.localidade == "Campinas")
      #expect(dataset.address(for: "20000000") == nil)
      #expect(dataset.address(for: "1234567") == nil)
      #expect(dataset.address(for: "abcdefgh") == nil)
      let existing = (10_000_000..<10_001_000).filter { dataset.address(forValue: $0) != nil }
      #expect(existing.count == 900)
    }

    @Test func syntheticCSVRowMatchesAddress() {
      for value in [10_000_000, 10_000_004, 15_555_552, 19_999_998] {
        var fast: [UInt8] = []
        SyntheticAddress.appendCSVRow(value, cepMasked: false, to: &fast)
        var slow: [UInt8] = []
        CSVField.appendRow(SyntheticAddress.address(value).csvFields, to: &slow)
        #expect(fast == slow)
      }
    }

    @Test func people() {
      #expect(dataset.people.count >= 20)
      #expect(Set(dataset.people.map(\.cpf)).count == dataset.people.count)
      for person in dataset.people {
        #expect(isValidCPF(person.cpf), "\(person.cpf)")
        #expect(["M", "F"].contains(person.gender))
        #expect(dataset.person(for: person.cpf) == person)
      }
      #expect(isValidCPF("52998224725"))
      #expect(!isValidCPF("52998224724"))
      #expect(!isValidCPF("11111111111"))
      #expect(!isValidCPF("5299822472"))
    }

    @Test func loadCSVAndJSONLines() throws {
      let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("cepismock-\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(at: directory) }
      let csvURL = directory.appendingPathComponent("data.csv")
      let csv = """
        uf,cep,logradouro,complemento,bairro,localidade,ibge,lat,lon,raio_m,precisao\r
        SP,01001000,"Praça ""X"", Sé",,Sé,São Paulo,3550308,-23.5,-46.6,100,logradouro\r
        RJ,20040-020,Rua Y,,Centro,Rio de Janeiro,3304557,,,,\r

        """
      try Data(csv.utf8).write(to: csvURL)
      let loaded = try MockDataset.load(contentsOf: csvURL)
      #expect(loaded.sampleCEPs == ["01001000", "20040020"])
      #expect(loaded.address(for: "01001000")?.logradouro == "Praça \"X\", Sé")
      #expect(loaded.address(for: "01001000")?.geo?.raioM == 100)
      #expect(loaded.address(for: "20040020")?.geo == nil)
      #expect(loaded.address(for: "12345678") == nil)
      #expect(loaded.count == 2)

      let jsonURL = directory.appendingPathComponent("data.jsonl")
      let original = try #require(MockDataset.sample.address(for: "01001000"))
      let line = String(decoding: try JSONEncoder().encode(original), as: UTF8.self)
      try Data((line + "\n\n" + #"{"cep":"99999999","localidade":"X"}"# + "\n").utf8)
        .write(to: jsonURL)
      let fromJSON = try MockDataset.load(contentsOf: jsonURL, keepSyntheticRange: true)
      #expect(fromJSON.address(for: "01001000") == original)
      #expect(fromJSON.address(for: "99999999")?.localidade == "X")
      #expect(fromJSON.address(for: "12345678") != nil)

      let badURL = directory.appendingPathComponent("bad.csv")
      try Data("cep,logradouro\nnot-a-cep,x\n".utf8).write(to: badURL)
      #expect(throws: MockDatasetError.self) { try MockDataset.load(contentsOf: badURL) }
    }
  }
}
