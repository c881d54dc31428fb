import Foundation

/// A misbehaviour the mock server injects into one answer.
///
/// Faults reach a route in three ways: queued with ``MockServer/script(_:_:)`` (one per request),
/// persistently with ``MockServer/setMode(_:_:)``, or randomly with ``MockChaos``. When several
/// apply to one request they are combined: modes first, then the chaos fault, then the scripted
/// fault; a later fault that replaces the body or status wins over an earlier one, while
/// delivery faults (delay, dribble, truncation, resets, giant headers) and CSV faults add up.
public enum MockFault: Sendable, Hashable {
  /// Answer with this HTTP status. `retryAfter` is the raw `Retry-After` header value (`"2"` or
  /// an HTTP-date); `body` replaces the default JSON error body.
  case status(Int, retryAfter: String? = nil, body: String? = nil)
  /// Wait this long before sending the (normal) answer.
  case delayHeaders(TimeInterval)
  /// Send the normal answer, but the body one byte at a time with `gap` between bytes.
  ///
  /// At most ``MockServer/Configuration/maxDribbleBytes`` bytes are dribbled; the rest of a
  /// longer body follows in one piece.
  case dribble(gap: TimeInterval)
  /// Announce the full `Content-Length`, send about half the body, then close the connection.
  case truncatedBody
  /// Close the connection with a TCP reset before sending anything.
  case resetBeforeHeaders
  /// Send the response head, then reset the connection.
  case resetAfterHeaders
  /// Answer 200 `text/html` with a captive-portal login page.
  case htmlPortal
  /// Answer 200 `application/json` with a JSON object of another shape.
  case wrongShapeJSON
  /// Answer 200 with the route's content type and a body of exactly `bytes` bytes of
  /// valid-looking padding, streamed without allocating it.
  case oversizedBody(bytes: Int)
  /// Answer 200 with `Transfer-Encoding: chunked` and never finish the body (until the client
  /// closes, the server stops, 60 seconds pass or 2 GiB were sent).
  case endlessChunked
  /// Add one response header whose value is `bytes` bytes long, then answer normally.
  case giantHeaders(bytes: Int)
  /// Answer 200 with the route's content type and a body that is not valid UTF-8.
  case invalidUTF8
  /// Answer 200 `{"success":false,"error":"…"}` (a cpfhub.io soft failure).
  case successFalse
  /// CSV only: start the body with a UTF-8 byte-order mark.
  case csvBOM
  /// CSV only: send the rows in another (deterministic) order; each row keeps its own CEP.
  case csvReordered
  /// CSV only: leave out the rows of CEPs that do not exist.
  case csvOmitMissing
  /// CSV only: send every row twice.
  case csvDuplicatedRows
  /// CSV only: write CEPs masked (`01001-000`).
  case csvMaskedCEPs
  /// CSV only: send the columns in another order (the header row names them).
  case csvColumnsShuffled
  /// CSV only: add rows for existing CEPs that were not asked for.
  case csvExtraRows
  /// CSV only: end lines with CRLF instead of LF.
  case csvCRLF
  /// Answer with a redirect: `status` (301, 302, 303, 307 or 308) and `Location: location`
  /// (absolute, or relative to the request), with an empty body.
  case redirect(status: Int = 302, location: String)
  /// ViaCEP only: write "not found" as the older `{"erro": true}` (a JSON boolean) instead of
  /// today's `{"erro": "true"}`.
  case viaCEPBooleanErro
  /// BrasilAPI only: answer 404 `service_error` as BrasilAPI does when its own upstream
  /// services fail, even for a CEP that exists: the errors read "A autenticacao de null
  /// falhou!" and "Erro ao se conectar com o serviço ViaCEP.", next to one "CEP não
  /// encontrado" (so only some, not all, say "not found").
  case brasilAPIOutage
  /// BrasilAPI only: answer 500 `{"message": "invalid json response body at …",
  /// "type": "invalid-json"}`, as its v2 endpoint does when its geocoder fails.
  case brasilAPIInvalidJSON
  /// No fault: answer normally (useful as a placeholder in a script).
  case normal

  /// A stable name for the fault, used as the key of ``MockServer/faultCounts``: the case name,
  /// with the code for statuses (`"status(503)"`).
  public var name: String {
    switch self {
    case .status(let code, _, _): return "status(\(code))"
    case .delayHeaders: return "delayHeaders"
    case .dribble: return "dribble"
    case .truncatedBody: return "truncatedBody"
    case .resetBeforeHeaders: return "resetBeforeHeaders"
    case .resetAfterHeaders: return "resetAfterHeaders"
    case .htmlPortal: return "htmlPortal"
    case .wrongShapeJSON: return "wrongShapeJSON"
    case .oversizedBody: return "oversizedBody"
    case .endlessChunked: return "endlessChunked"
    case .giantHeaders: return "giantHeaders"
    case .invalidUTF8: return "invalidUTF8"
    case .successFalse: return "successFalse"
    case .csvBOM: return "csvBOM"
    case .csvReordered: return "csvReordered"
    case .csvOmitMissing: return "csvOmitMissing"
    case .csvDuplicatedRows: return "csvDuplicatedRows"
    case .csvMaskedCEPs: return "csvMaskedCEPs"
    case .csvColumnsShuffled: return "csvColumnsShuffled"
    case .csvExtraRows: return "csvExtraRows"
    case .csvCRLF: return "csvCRLF"
    case .redirect(let status, _): return "redirect(\(status))"
    case .viaCEPBooleanErro: return "viaCEPBooleanErro"
    case .brasilAPIOutage: return "brasilAPIOutage"
    case .brasilAPIInvalidJSON: return "brasilAPIInvalidJSON"
    case .normal: return "normal"
    }
  }

  /// Whether the fault only changes CSV answers (it is ignored on the other routes).
  public var isCSVOnly: Bool {
    switch self {
    case .csvBOM, .csvReordered, .csvOmitMissing, .csvDuplicatedRows, .csvMaskedCEPs,
      .csvColumnsShuffled, .csvExtraRows, .csvCRLF:
      return true
    default:
      return false
    }
  }

  /// The one route the fault is meant for (CSV faults: ``MockRoute/csv``; provider faults:
  /// their provider's route), or `nil` when it applies to every route.
  public var onlyRoute: MockRoute? {
    switch self {
    case .viaCEPBooleanErro: return .viaCEP
    case .brasilAPIOutage, .brasilAPIInvalidJSON: return .brasilAPI
    default: return isCSVOnly ? .csv : nil
    }
  }

  /// Whether the fault changes anything on `route`.
  func applies(to route: MockRoute) -> Bool {
    if self == .normal { return false }
    guard let only = onlyRoute else { return true }
    return only == route
  }
}
