/// One of the 27 federative units of Brazil: the 26 states and the Distrito Federal.
///
/// The raw value is the two-letter abbreviation used by the Correios, the IBGE and
/// every address form:
///
/// ```swift
/// let uf = UF(rawValue: "SP")   // .sp
/// uf?.name                      // "São Paulo"
/// uf?.ibgeCode                  // 35
/// uf?.region                    // .sudeste
/// UF(cep: "01001-000")          // .sp, offline
/// ```
public enum UF: String, CaseIterable, Sendable, Codable {
  /// Acre.
  case ac = "AC"
  /// Alagoas.
  case al = "AL"
  /// Amapá.
  case ap = "AP"
  /// Amazonas.
  case am = "AM"
  /// Bahia.
  case ba = "BA"
  /// Ceará.
  case ce = "CE"
  /// Distrito Federal.
  case df = "DF"
  /// Espírito Santo.
  case es = "ES"
  /// Goiás.
  case go = "GO"
  /// Maranhão.
  case ma = "MA"
  /// Mato Grosso.
  case mt = "MT"
  /// Mato Grosso do Sul.
  case ms = "MS"
  /// Minas Gerais.
  case mg = "MG"
  /// Pará.
  case pa = "PA"
  /// Paraíba.
  case pb = "PB"
  /// Paraná.
  case pr = "PR"
  /// Pernambuco.
  case pe = "PE"
  /// Piauí.
  case pi = "PI"
  /// Rio de Janeiro.
  case rj = "RJ"
  /// Rio Grande do Norte.
  case rn = "RN"
  /// Rio Grande do Sul.
  case rs = "RS"
  /// Rondônia.
  case ro = "RO"
  /// Roraima.
  case rr = "RR"
  /// Santa Catarina.
  case sc = "SC"
  /// São Paulo.
  case sp = "SP"
  /// Sergipe.
  case se = "SE"
  /// Tocantins.
  case to = "TO"

  /// The unit's name in Portuguese, as written in the Constitution (`"São Paulo"`).
  public var name: String {
    switch self {
    case .ac: return "Acre"
    case .al: return "Alagoas"
    case .ap: return "Amapá"
    case .am: return "Amazonas"
    case .ba: return "Bahia"
    case .ce: return "Ceará"
    case .df: return "Distrito Federal"
    case .es: return "Espírito Santo"
    case .go: return "Goiás"
    case .ma: return "Maranhão"
    case .mt: return "Mato Grosso"
    case .ms: return "Mato Grosso do Sul"
    case .mg: return "Minas Gerais"
    case .pa: return "Pará"
    case .pb: return "Paraíba"
    case .pr: return "Paraná"
    case .pe: return "Pernambuco"
    case .pi: return "Piauí"
    case .rj: return "Rio de Janeiro"
    case .rn: return "Rio Grande do Norte"
    case .rs: return "Rio Grande do Sul"
    case .ro: return "Rondônia"
    case .rr: return "Roraima"
    case .sc: return "Santa Catarina"
    case .sp: return "São Paulo"
    case .se: return "Sergipe"
    case .to: return "Tocantins"
    }
  }

  /// The IBGE code of the unit (its first digit is the IBGE region): SP is 35, DF is 53.
  public var ibgeCode: Int {
    switch self {
    case .ro: return 11
    case .ac: return 12
    case .am: return 13
    case .rr: return 14
    case .pa: return 15
    case .ap: return 16
    case .to: return 17
    case .ma: return 21
    case .pi: return 22
    case .ce: return 23
    case .rn: return 24
    case .pb: return 25
    case .pe: return 26
    case .al: return 27
    case .se: return 28
    case .ba: return 29
    case .mg: return 31
    case .es: return 32
    case .rj: return 33
    case .sp: return 35
    case .pr: return 41
    case .sc: return 42
    case .rs: return 43
    case .ms: return 50
    case .mt: return 51
    case .go: return 52
    case .df: return 53
    }
  }

  /// The unit with the given IBGE code, or `nil` if no unit has it.
  ///
  /// ```swift
  /// UF(ibgeCode: 33)  // .rj
  /// ```
  public init?(ibgeCode: Int) {
    guard let match = Self.allCases.first(where: { $0.ibgeCode == ibgeCode }) else {
      return nil
    }
    self = match
  }

  /// The geographic region (IBGE) the unit belongs to.
  public var region: Region {
    // The IBGE code's first digit is the region, by construction of the code.
    switch ibgeCode / 10 {
    case 1: return .norte
    case 2: return .nordeste
    case 3: return .sudeste
    case 4: return .sul
    default: return .centroOeste
    }
  }

  /// The Receita Federal fiscal region whose digit appears 9th in the CPFs issued here.
  public var fiscalRegion: FiscalRegion {
    switch self {
    case .df, .go, .ms, .mt, .to: return .first
    case .ac, .am, .ap, .pa, .ro, .rr: return .second
    case .ce, .ma, .pi: return .third
    case .al, .pb, .pe, .rn: return .fourth
    case .ba, .se: return .fifth
    case .mg: return .sixth
    case .es, .rj: return .seventh
    case .sp: return .eighth
    case .pr, .sc: return .ninth
    case .rs: return .tenth
    }
  }

  /// The five geographic regions of Brazil defined by the IBGE.
  public enum Region: String, CaseIterable, Sendable, Codable {
    /// Norte: AC, AP, AM, PA, RO, RR, TO.
    case norte
    /// Nordeste: AL, BA, CE, MA, PB, PE, PI, RN, SE.
    case nordeste
    /// Centro-Oeste: DF, GO, MT, MS.
    case centroOeste
    /// Sudeste: ES, MG, RJ, SP.
    case sudeste
    /// Sul: PR, RS, SC.
    case sul

    /// The region's name for display, in Portuguese (`"Centro-Oeste"`).
    public var name: String {
      switch self {
      case .norte: return "Norte"
      case .nordeste: return "Nordeste"
      case .centroOeste: return "Centro-Oeste"
      case .sudeste: return "Sudeste"
      case .sul: return "Sul"
      }
    }

    /// The units in the region, in alphabetical order of abbreviation.
    public var units: [UF] {
      UF.allCases.filter { $0.region == self }
    }
  }
}
