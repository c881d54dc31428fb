import Foundation

/// How the senders of one bulk run share what a rate-limited API allows: the arithmetic of a
/// ``RateGate``, on a clock the caller passes in (seconds on a monotonic scale), with no
/// waiting of its own.
///
/// - **Pause.** A 429 stops every sender until its `Retry-After` (without one: half a second,
///   doubling with each 429 in a row, at most 30 s), not just the one it answered. A
///   `Retry-After: 0` is honoured once; refused again with nothing answered since, the run
///   backs off as without one.
/// - **Window (AIMD).** The requests in flight at once start at ``maxWindow``, halve on a 429
///   (at least 1) and grow back by one for each window's worth of answers.
/// - **Pace (AIMD).** The first 429 after an answer sets a pace: the answers the API gave
///   since sending resumed, over that stretch and the 429's `Retry-After` — what the API
///   actually let through. A later 429 lowers it the same way (never raises it), when its
///   stretch is long enough to measure. Each answer then adds a hundredth of the pace last
///   set, so the run probes upwards slowly, and the next 429 comes late. Requests are spaced
///   at the pace. A 429 to a run's only request, before any answer, sets none: nothing
///   measures a rate yet.
/// - **Only the time the run asked.** A stretch's span leaves out the time a request could
///   have started and the run had none to send (its reader was busy, or every row waited on
///   one slow answer): such a run is held back by itself, not by the API, and its few answers
///   say nothing about the API's rate. A stretch that was mostly such time is too short to
///   measure.
/// - **One decrease per burst.** A 429 answered to a request sent before the last decrease
///   changes nothing but the pause: refusals of requests that were in flight together are
///   one decrease.
/// - **Patience.** When only 429s have come for ``patience`` seconds, ``admit(now:)`` answers
///   ``Admission/expired``.
///
/// The first pace comes from the burst the API let through before its first 429, over its
/// `Retry-After`: exact for an API that refills its burst within that time, an underestimate
/// (by up to half) for one whose burst is a single request and whose `Retry-After` is longer
/// than its interval, which the additive increase then makes up slowly. The model tests
/// (`SendWindowTests`) run both kinds on a virtual clock.
package struct SendWindow: Sendable, Equatable {
  /// What a sender may do now.
  package enum Admission: Sendable, Equatable {
    /// Send; `sentAt` identifies the request to ``refused(sentAt:retryAfter:now:)``.
    case send(sentAt: Double)
    /// Wait until this instant, then ask again.
    case wait(until: Double)
    /// Wait until a request in flight ends, then ask again.
    case waitForSlot
    /// Only 429s have come for ``patience`` seconds: give up.
    case expired
  }

  /// The most requests in flight at once.
  package let maxWindow: Int
  /// How long only 429s may come before the senders give up.
  package let patience: TimeInterval
  /// The requests allowed in flight now (its whole part counts).
  package private(set) var window: Double
  /// The requests in flight.
  package private(set) var inFlight = 0
  /// No request starts before this instant.
  package private(set) var pauseUntil = -Double.infinity
  /// The pace, in requests a second; `nil` until the first 429.
  package private(set) var pace: Double?
  private var paceStep = 0.0
  /// The pace was guessed (a 429 came before any answer), not measured.
  private var paceIsGuess = false
  private var nextSendAt = -Double.infinity
  /// Where the stretch of sending that the next 429 measures began, and its answers.
  private var stretchStart: Double
  private var stretchAnswers = 0
  /// The time of the stretch when a request could have started and none was asked for.
  private var stretchIdle = 0.0
  /// The instant from which a request could start (a slot free, the pace and any pause
  /// over), while none has; `nil` while every slot is taken.
  private var readySince: Double?
  private var lastDecreaseAt = -Double.infinity
  /// The stretch the last decrease measured: its answers (late ones included), its span and
  /// the pace before it.
  private var measured = Measured()
  private var refusalsInARow = 0
  /// Decreases since the last answer.
  private var decreasesInARow = 0
  /// The first 429 since the last answer, while no answer has come since.
  package private(set) var refusingSince: Double?
  /// 429s received.
  package private(set) var refusals = 0
  /// Pauses begun (a 429 that extends a pause under way starts none).
  package private(set) var pauses = 0
  /// Seconds of pause in all.
  package private(set) var pausedSeconds = 0.0

  /// The shortest stretch a pace is measured over: answers that came together at once say
  /// little about a rate.
  static let shortestStretch = 0.25

  /// A window of `maxWindow` requests in flight, unpaced, starting at `now`.
  package init(maxWindow: Int, patience: TimeInterval, now: Double) {
    self.maxWindow = max(1, maxWindow)
    self.patience = patience.isNaN ? 600 : max(0, patience)
    self.window = Double(self.maxWindow)
    self.stretchStart = now
    self.readySince = now
  }

  /// Whether a request may start at `now`, and if it may, counts it in flight.
  package mutating func admit(now: Double) -> Admission {
    // While only 429s come, no wait ends after the senders would give up.
    let givesUpAt = refusingSince.map { $0 + patience } ?? .infinity
    if now >= givesUpAt { return .expired }
    if now < pauseUntil { return .wait(until: min(pauseUntil, givesUpAt)) }
    if inFlight >= Int(window) { return .waitForSlot }
    if pace != nil, now < nextSendAt { return .wait(until: min(nextSendAt, givesUpAt)) }
    if let ready = readySince {
      stretchIdle += max(0, now - max(ready, stretchStart))
    }
    inFlight += 1
    if let pace { nextSendAt = max(nextSendAt, now) + 1 / pace }
    readySince = nil
    noteSlot(now: now)
    return .send(sentAt: now)
  }

  /// After a change at `now`: from when a request could start, if a slot is free and none was
  /// already counted as ready.
  private mutating func noteSlot(now: Double) {
    guard inFlight < Int(window) else {
      readySince = nil
      return
    }
    let ready = max(now, pauseUntil, pace == nil ? now : nextSendAt)
    readySince = min(readySince ?? ready, ready)
  }

  /// Whether a request could start at `now` as far as the window goes (a slot is free).
  package var hasFreeSlot: Bool { inFlight < Int(window) }

  /// The request sent at `sentAt` was answered (anything but a 429).
  ///
  /// An answer to a request sent before the last decrease belongs to the stretch that decrease
  /// measured: a 429 may overtake the answers of its own burst (a small refusal against large
  /// answers), so the pace it set is raised to what they show (never above the pace before the
  /// decrease).
  package mutating func answered(sentAt: Double, now: Double) {
    inFlight -= 1
    refusingSince = nil
    refusalsInARow = 0
    decreasesInARow = 0
    window = min(Double(maxWindow), window + 1 / window)
    noteSlot(now: now)
    guard sentAt > lastDecreaseAt else {
      measured.answers += 1
      let allowed = Double(measured.answers) / measured.span
      if let pace, allowed > pace {
        let raised = min(allowed, measured.ceiling)
        self.pace = raised
        paceStep = raised / 100
      }
      return
    }
    stretchAnswers += 1
    if let pace { self.pace = paceIsGuess ? min(pace * 2, 1_000_000) : pace + paceStep }
  }

  /// A request ended without an answer (a network failure, a cancel) at `now`.
  package mutating func released(now: Double) {
    inFlight -= 1
    noteSlot(now: now)
  }

  /// The request sent at `sentAt` was refused with a 429 at `now`; `retryAfter` is what the
  /// API asked for.
  package mutating func refused(sentAt: Double, retryAfter: TimeInterval?, now: Double) {
    inFlight -= 1
    refusals += 1
    refusalsInARow += 1
    if refusingSince == nil { refusingSince = now }
    // A request admitted before the last decrease was sent at the old window and pace.
    let decreases = sentAt > lastDecreaseAt
    if decreases { decreasesInARow += 1 }
    let wait: Double
    if let retryAfter, retryAfter > 0 || decreasesInARow < 2 {
      wait = max(0, retryAfter)
    } else if let retryAfter {
      // `Retry-After: 0` asks for no wait; but refused again with nothing answered since,
      // the run backs off as without one, or an API that refuses everything would be asked
      // as fast as it answers.
      wait = max(retryAfter, Self.backoff(decreasesInARow - 2))
    } else {
      wait = Self.backoff(refusalsInARow - 1)
    }
    let until = now + wait
    if until > pauseUntil {
      if pauseUntil <= now, wait > 0 { pauses += 1 }
      pausedSeconds += until - max(pauseUntil, now)
      pauseUntil = until
    }
    // Time a request could have started until now, and none did, is idle too; no request
    // starts before the pause ends, and time until then is not the run's own.
    if let ready = readySince {
      stretchIdle += max(0, now - max(ready, stretchStart))
      readySince = max(now, pauseUntil)
    }
    defer { noteSlot(now: now) }
    guard decreases else { return }
    lastDecreaseAt = now
    window = max(1, (window / 2).rounded(.down))
    // A stretch shorter than the shortest measurable one says nothing about the rate
    // (answers paced just under a limit would read as far fewer). With a pace set, the pace
    // stays and the stretch goes on, so the next 429 measures it whole: sporadic 429s then
    // cost a pause and half the window, not a pace halved each time.
    let stretch = now - stretchStart + wait - stretchIdle
    guard pace == nil || stretch >= Self.shortestStretch else { return }
    // Refused before any answer, with none on its way (whose late answers would measure the
    // burst, see `answered`), the run knows nothing of the rate: no pace yet (429s in a row
    // back off, above); the next 429 after answers measures it.
    guard pace != nil || stretchAnswers > 0 || inFlight > 0 else {
      startStretch(now: now)
      return
    }
    let span = max(stretch, Self.shortestStretch)
    let allowed = Double(stretchAnswers) / span
    // A first pace measured over too short a stretch, or before any answer, is a guess:
    // answers then double it until a 429 measures the rate (a 429 with `Retry-After: 0` among the first requests would
    // otherwise pace a whole run at the guess).
    if pace == nil { paceIsGuess = stretch < Self.shortestStretch || allowed == 0 }
    if allowed > 0, stretch >= Self.shortestStretch { paceIsGuess = false }
    let slower = allowed > 0 ? allowed : (pace.map { $0 / 2 } ?? 1 / max(wait, 1))
    let newPace = max(RateLimit.slowest, min(slower, pace ?? .infinity))
    measured = Measured(answers: stretchAnswers, span: span, ceiling: pace ?? .infinity)
    pace = newPace
    paceStep = newPace / 100
    nextSendAt = max(nextSendAt, pauseUntil)
    startStretch(now: now)
  }

  /// The next stretch starts when the pause under way ends.
  private mutating func startStretch(now: Double) {
    stretchStart = max(now, pauseUntil)
    stretchAnswers = 0
    stretchIdle = 0
  }

  /// The pause after `doublings` doublings of half a second, at most 30 s.
  private static func backoff(_ doublings: Int) -> Double {
    min(30, 0.5 * pow(2, Double(min(max(0, doublings), 6))))
  }

  /// A stretch a decrease measured.
  private struct Measured: Sendable, Equatable {
    var answers = 0
    var span = 1.0
    var ceiling = Double.infinity
  }
}
