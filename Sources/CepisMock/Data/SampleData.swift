import BrazilianDocuments

/// The compact tables the SAMPLE dataset is generated from.
///
/// This is not DNE data: capitals, IBGE codes, CEP ranges and neighbourhood names are real,
/// but the street/CEP/coordinate combinations are made up deterministically. People are
/// fictitious.
enum SampleData {
  struct State {
    var uf: String
    var city: String
    var ibge: String
    var cepBase: Int
    var lat: Double
    var lon: Double
    var bairros: [String]
  }

  static let states: [State] = [
    State(
      uf: "SP", city: "São Paulo", ibge: "3550308", cepBase: 1_310_000, lat: -23.5505,
      lon: -46.6333, bairros: ["Bela Vista", "Consolação", "Pinheiros"]),
    State(
      uf: "RJ", city: "Rio de Janeiro", ibge: "3304557", cepBase: 20_040_000, lat: -22.9068,
      lon: -43.1729, bairros: ["Centro", "Copacabana", "Botafogo"]),
    State(
      uf: "ES", city: "Vitória", ibge: "3205309", cepBase: 29_010_000, lat: -20.3155,
      lon: -40.3128, bairros: ["Centro", "Praia do Canto", "Jardim Camburi"]),
    State(
      uf: "MG", city: "Belo Horizonte", ibge: "3106200", cepBase: 30_110_000, lat: -19.9167,
      lon: -43.9345, bairros: ["Centro", "Savassi", "Funcionários"]),
    State(
      uf: "BA", city: "Salvador", ibge: "2927408", cepBase: 40_010_000, lat: -12.9714,
      lon: -38.5014, bairros: ["Comércio", "Barra", "Pituba"]),
    State(
      uf: "SE", city: "Aracaju", ibge: "2800308", cepBase: 49_010_000, lat: -10.9472,
      lon: -37.0731, bairros: ["Centro", "Atalaia", "Jardins"]),
    State(
      uf: "PE", city: "Recife", ibge: "2611606", cepBase: 50_010_000, lat: -8.0476,
      lon: -34.8770, bairros: ["Boa Vista", "Boa Viagem", "Santo Antônio"]),
    State(
      uf: "AL", city: "Maceió", ibge: "2704302", cepBase: 57_020_000, lat: -9.6658,
      lon: -35.7353, bairros: ["Centro", "Ponta Verde", "Pajuçara"]),
    State(
      uf: "PB", city: "João Pessoa", ibge: "2507507", cepBase: 58_010_000, lat: -7.1195,
      lon: -34.8450, bairros: ["Centro", "Tambaú", "Manaíra"]),
    State(
      uf: "RN", city: "Natal", ibge: "2408102", cepBase: 59_010_000, lat: -5.7945,
      lon: -35.2110, bairros: ["Cidade Alta", "Ponta Negra", "Tirol"]),
    State(
      uf: "CE", city: "Fortaleza", ibge: "2304400", cepBase: 60_010_000, lat: -3.7319,
      lon: -38.5267, bairros: ["Centro", "Aldeota", "Meireles"]),
    State(
      uf: "PI", city: "Teresina", ibge: "2211001", cepBase: 64_000_000, lat: -5.0920,
      lon: -42.8038, bairros: ["Centro", "Fátima", "Jóquei"]),
    State(
      uf: "MA", city: "São Luís", ibge: "2111300", cepBase: 65_010_000, lat: -2.5307,
      lon: -44.3068, bairros: ["Centro", "Renascença", "Calhau"]),
    State(
      uf: "PA", city: "Belém", ibge: "1501402", cepBase: 66_010_000, lat: -1.4558,
      lon: -48.4902, bairros: ["Campina", "Nazaré", "Umarizal"]),
    State(
      uf: "AP", city: "Macapá", ibge: "1600303", cepBase: 68_900_000, lat: 0.0349,
      lon: -51.0694, bairros: ["Central", "Trem", "Santa Rita"]),
    State(
      uf: "AM", city: "Manaus", ibge: "1302603", cepBase: 69_005_000, lat: -3.1190,
      lon: -60.0217, bairros: ["Centro", "Adrianópolis", "Ponta Negra"]),
    State(
      uf: "RR", city: "Boa Vista", ibge: "1400100", cepBase: 69_301_000, lat: 2.8235,
      lon: -60.6758, bairros: ["Centro", "São Francisco", "Caçari"]),
    State(
      uf: "AC", city: "Rio Branco", ibge: "1200401", cepBase: 69_900_000, lat: -9.9754,
      lon: -67.8249, bairros: ["Centro", "Bosque", "Base"]),
    State(
      uf: "DF", city: "Brasília", ibge: "5300108", cepBase: 70_040_000, lat: -15.7939,
      lon: -47.8828, bairros: ["Asa Sul", "Asa Norte", "Lago Sul"]),
    State(
      uf: "GO", city: "Goiânia", ibge: "5208707", cepBase: 74_003_000, lat: -16.6869,
      lon: -49.2648, bairros: ["Setor Central", "Setor Bueno", "Setor Oeste"]),
    State(
      uf: "TO", city: "Palmas", ibge: "1721000", cepBase: 77_001_000, lat: -10.1840,
      lon: -48.3336, bairros: ["Plano Diretor Sul", "Plano Diretor Norte", "Taquaralto"]),
    State(
      uf: "MT", city: "Cuiabá", ibge: "5103403", cepBase: 78_005_000, lat: -15.6014,
      lon: -56.0979, bairros: ["Centro Sul", "Goiabeiras", "Bosque da Saúde"]),
    State(
      uf: "RO", city: "Porto Velho", ibge: "1100205", cepBase: 76_801_000, lat: -8.7612,
      lon: -63.9004, bairros: ["Centro", "Olaria", "Nossa Senhora das Graças"]),
    State(
      uf: "MS", city: "Campo Grande", ibge: "5002704", cepBase: 79_002_000, lat: -20.4697,
      lon: -54.6201, bairros: ["Centro", "Jardim dos Estados", "Amambaí"]),
    State(
      uf: "PR", city: "Curitiba", ibge: "4106902", cepBase: 80_010_000, lat: -25.4284,
      lon: -49.2733, bairros: ["Centro", "Batel", "Água Verde"]),
    State(
      uf: "SC", city: "Florianópolis", ibge: "4205407", cepBase: 88_010_000, lat: -27.5954,
      lon: -48.5480, bairros: ["Centro", "Trindade", "Agronômica"]),
    State(
      uf: "RS", city: "Porto Alegre", ibge: "4314902", cepBase: 90_010_000, lat: -30.0346,
      lon: -51.2177, bairros: ["Centro Histórico", "Moinhos de Vento", "Cidade Baixa"]),
  ]

  static let streets = [
    "Rua Sete de Setembro", "Avenida Presidente Vargas", "Rua Tiradentes", "Rua Dom Pedro II",
    "Avenida Getúlio Vargas", "Rua Rui Barbosa", "Rua XV de Novembro", "Avenida Brasil",
    "Rua José de Alencar", "Rua Barão do Rio Branco", "Rua Marechal Deodoro",
    "Travessa \"Beco do Sol\"", "Avenida Santos Dumont", "Rua Castro Alves",
    "Praça da Independência", "Rua Padre Anchieta, Trecho 2",
  ]

  static let complementos = [
    "", "lado par", "lado ímpar", "até 799/800", "de 801/802 ao fim", "",
    "até 1199, lado ímpar", "", "\"Galeria Central\"", "",
  ]

  /// How many addresses each state gets (27 × 12 = 324, plus the famous ones).
  static let perState = 12

  static func addresses() -> [MockAddress] {
    var result: [MockAddress] = [
      MockAddress(
        cep: "01001000", logradouro: "Praça da Sé", complemento: "lado ímpar", bairro: "Sé",
        localidade: "São Paulo", uf: "SP", ibge: "3550308",
        geo: MockGeo(lat: -23.5503, lon: -46.6339, raioM: 120, precisao: "logradouro")),
      MockAddress(
        cep: "20040020", logradouro: "Avenida Rio Branco", complemento: "até 89/90",
        bairro: "Centro", localidade: "Rio de Janeiro", uf: "RJ", ibge: "3304557",
        geo: MockGeo(lat: -22.9035, lon: -43.1773, raioM: 150, precisao: "logradouro")),
      MockAddress(
        cep: "70150900", logradouro: "Praça dos Três Poderes", complemento: "",
        bairro: "Zona Cívico-Administrativa", localidade: "Brasília", uf: "DF", ibge: "5300108",
        geo: MockGeo(lat: -15.7998, lon: -47.8645, raioM: 200, precisao: "logradouro")),
      // Inside the synthetic range: the explicit address wins.
      MockAddress(
        cep: "13010000", logradouro: "Rua Barão de Jaguara", complemento: "", bairro: "Centro",
        localidade: "Campinas", uf: "SP", ibge: "3509502",
        geo: MockGeo(lat: -22.9056, lon: -47.0608, raioM: 25_000, precisao: "localidade")),
    ]
    for (stateIndex, state) in states.enumerated() {
      for index in 0..<perState {
        let mix = stateIndex * 7 + index
        let cep = state.cepBase + index * 1_010 + (mix % 5) * 2
        let geo: MockGeo?
        switch index % 3 {
        case 0:
          geo = MockGeo(
            lat: state.lat + Double(index % 5) * 0.004 - 0.008,
            lon: state.lon + Double(index % 4) * 0.005 - 0.007,
            raioM: 60 + (mix % 9) * 20, precisao: "logradouro")
        case 1:
          geo = MockGeo(lat: state.lat, lon: state.lon, raioM: 15_000, precisao: "localidade")
        default:
          geo = nil
        }
        result.append(
          MockAddress(
            cep: cepString(cep), logradouro: streets[mix % streets.count],
            complemento: complementos[mix % complementos.count],
            bairro: state.bairros[index % state.bairros.count], localidade: state.city,
            uf: state.uf, ibge: state.ibge, geo: geo))
      }
    }
    return result
  }

  static let firstNames: [(String, String)] = [
    ("Ana", "F"), ("Bruno", "M"), ("Carla", "F"), ("Diego", "M"), ("Elisa", "F"),
    ("Fábio", "M"), ("Gabriela", "F"), ("Heitor", "M"), ("Isabela", "F"), ("João", "M"),
    ("Larissa", "F"), ("Marcelo", "M"), ("Natália", "F"), ("Otávio", "M"), ("Patrícia", "F"),
    ("Rafael", "M"), ("Sílvia", "F"), ("Tiago", "M"), ("Úrsula", "F"), ("Vinícius", "M"),
    ("Yasmin", "F"), ("Caio", "M"), ("Letícia", "F"), ("Renato", "M"),
  ]

  static let surnames = [
    "Fictício da Silva", "Exemplo Souza", "de Teste Oliveira", "Simulado Pereira",
    "Amostra Costa", "Modelo Rodrigues", "Imaginário Almeida", "Protótipo Nascimento",
  ]

  static func people() -> [MockPerson] {
    var generator = SplitMix64(state: 0x00CE_9150)
    var result: [MockPerson] = []
    for (index, (first, gender)) in firstNames.enumerated() {
      var nine: [Int] = []
      repeat {
        nine = (0..<9).map { _ in Int(generator.next() % 10) }
      } while Set(nine).count < 3
      let checks = CPF.checkDigits(base: nine)
      let cpf = (nine + [checks.tenth, checks.eleventh]).map(String.init).joined()
      result.append(
        MockPerson(
          cpf: cpf, name: "\(first) \(surnames[index % surnames.count])", gender: gender,
          day: 1 + Int(generator.next() % 28), month: 1 + Int(generator.next() % 12),
          year: 1940 + Int(generator.next() % 66)))
    }
    return result
  }
}
