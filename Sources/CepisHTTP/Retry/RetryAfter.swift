import Foundation

/// Parsing of the `Retry-After` header (RFC 9110 §10.2.3).
///
/// The value is either delta-seconds or an HTTP-date, and §5.6.7 requires recipients to
/// accept all three date forms: IMF-fixdate, the obsolete RFC 850 form and asctime.
/// `DateFormatter` is avoided on purpose: it is locale-sensitive, slow to create, and
/// behaves differently across Foundation implementations.
package enum RetryAfter {
  /// The number of seconds to wait that `value` asks for, measured from `now`, or `nil`
  /// when the value is not a valid `Retry-After`. A date in the past gives `0`.
  package static func seconds(from value: String, now: Date) -> TimeInterval? {
    let trimmed = value.trimmingCharacters(in: .whitespaces)
    guard !trimmed.isEmpty, trimmed.utf8.count <= 64 else { return nil }
    if trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
      // Delta-seconds may be arbitrarily long; anything beyond a day is as good as a day.
      guard trimmed.utf8.count <= 9, let seconds = Int(trimmed) else { return 86_400 }
      return TimeInterval(seconds)
    }
    guard let date = httpDate(trimmed, now: now) else { return nil }
    return max(0, date.timeIntervalSince(now))
  }

  /// Parses an HTTP-date in any of the three forms RFC 9110 §5.6.7 names.
  static func httpDate(_ text: String, now: Date) -> Date? {
    let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
    // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    if tokens.count == 6, isDayName(tokens[0], long: false), tokens[5] == "GMT",
      let day = number(tokens[1], digits: 2), let month = monthNumber(tokens[2]),
      let year = number(tokens[3], digits: 4), let time = clock(tokens[4])
    {
      return makeDate(year: year, month: month, day: day, time: time)
    }
    // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
    if tokens.count == 4, isDayName(tokens[0], long: true), tokens[3] == "GMT" {
      let parts = tokens[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
      if parts.count == 3, let day = number(parts[0], digits: 2),
        let month = monthNumber(parts[1]), let shortYear = number(parts[2], digits: 2),
        let time = clock(tokens[2])
      {
        let year = fullYear(fromTwoDigits: shortYear, now: now)
        return makeDate(year: year, month: month, day: day, time: time)
      }
    }
    // asctime: Sun Nov  6 08:49:37 1994
    if tokens.count == 5, isDayName(tokens[0], long: false),
      let month = monthNumber(tokens[1]), let day = number(tokens[2], digits: 1...2),
      let time = clock(tokens[3]), let year = number(tokens[4], digits: 4)
    {
      return makeDate(year: year, month: month, day: day, time: time)
    }
    return nil
  }

  private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
  private static let longDays = [
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
  ]
  private static let months = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
  ]

  private static func isDayName(_ token: String, long: Bool) -> Bool {
    long ? longDays.contains(token) : shortDays.contains(token)
  }

  private static func monthNumber(_ token: String) -> Int? {
    months.firstIndex(of: token).map { $0 + 1 }
  }

  private static func number(_ token: String, digits: Int) -> Int? {
    number(token, digits: digits...digits)
  }

  private static func number(_ token: String, digits: ClosedRange<Int>) -> Int? {
    guard digits.contains(token.utf8.count),
      token.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
    else { return nil }
    return Int(token)
  }

  private static func clock(_ token: String) -> (Int, Int, Int)? {
    let parts = token.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard parts.count == 3, let hour = number(parts[0], digits: 2),
      let minute = number(parts[1], digits: 2), let second = number(parts[2], digits: 2),
      hour < 24, minute < 60, second <= 60
    else { return nil }
    return (hour, minute, second)
  }

  /// RFC 9110: a two-digit year that appears to be more than 50 years in the future is
  /// in the past century.
  private static func fullYear(fromTwoDigits shortYear: Int, now: Date) -> Int {
    let currentYear = civilYear(of: now)
    let century = currentYear / 100 * 100
    var year = century + shortYear
    if year > currentYear + 50 { year -= 100 }
    return year
  }

  private static func civilYear(of date: Date) -> Int {
    let days = Int((date.timeIntervalSince1970 / 86_400).rounded(.down))
    return civilFromDays(days).year
  }

  private static func makeDate(year: Int, month: Int, day: Int, time: (Int, Int, Int)) -> Date? {
    guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month)
    else { return nil }
    let days = daysFromCivil(year: year, month: month, day: day)
    let seconds = days * 86_400 + time.0 * 3_600 + time.1 * 60 + time.2
    return Date(timeIntervalSince1970: TimeInterval(seconds))
  }

  private static func daysInMonth(year: Int, month: Int) -> Int {
    switch month {
    case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }

  // Howard Hinnant's days-from-civil algorithm, proleptic Gregorian calendar.
  private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let adjustedYear = month <= 2 ? year - 1 : year
    let era = (adjustedYear >= 0 ? adjustedYear : adjustedYear - 399) / 400
    let yearOfEra = adjustedYear - era * 400
    let shiftedMonth = month > 2 ? month - 3 : month + 9
    let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }

  private static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
    let shifted = days + 719_468
    let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
    let dayOfEra = shifted - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthPrime = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
    let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    return (year, month, day)
  }
}
