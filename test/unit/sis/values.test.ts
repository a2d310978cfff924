import { describe, expect, it } from 'vitest';
import { formatLocalDatetime, formatSisTime, operationDayBounds, operationDayOf, parseSisTime } from '../../../lib/sis/values.ts';

const TZ = 'Asia/Shanghai';

describe('SIS values', () => {
  it.each([
    ['23JAN210535', '2021-01-22T21:35:00.000Z'],
    ['23jan210535', '2021-01-22T21:35:00.000Z'],
    ['29FEB240000', '2024-02-28T16:00:00.000Z'],
  ])('parses %s as airport local time', (text, iso) => {
    expect(parseSisTime(text, TZ).toISOString()).toBe(iso);
    expect(formatSisTime(parseSisTime(text, TZ), TZ)).toBe(text.toUpperCase());
  });

  it.each(['31FEB210535', '23XXX210535', '23JAN212460', '', '2021-01-23'])('rejects %j as PROTOCOL naming the tag', (text) => {
    expect(() => parseSisTime(text, TZ, 'PGOT')).toThrow(`PROTOCOL: PGOT="${text}"`);
  });

  it('derives the operation day with the cutover', () => {
    const t = parseSisTime('23JAN210535', TZ);
    expect(operationDayOf(t, TZ, '00:00')).toBe('2021-01-23');
    expect(operationDayOf(t, TZ, '06:00')).toBe('2021-01-22');
    const b = operationDayBounds('2026-12-01', TZ, '04:30');
    expect([formatSisTime(b.start, TZ), formatSisTime(b.end, TZ)]).toEqual(['01DEC260430', '02DEC260429']);
  });

  it('formats zone-less MySQL datetimes in airport time', () => {
    expect(formatLocalDatetime(new Date('2026-12-01T00:00:00Z'), TZ)).toBe('2026-12-01 08:00:00');
  });
});

describe('DST: zones with daylight saving time', () => {
  it.each([
    // spring gap: the wall time does not exist → forward by the gap
    ['29MAR260230', 'Europe/Berlin', '2026-03-29T01:30:00.000Z', '29MAR260330'],
    ['08MAR260230', 'America/New_York', '2026-03-08T07:30:00.000Z', '08MAR260330'],
    // either side of the gap: exact
    ['29MAR260159', 'Europe/Berlin', '2026-03-29T00:59:00.000Z', '29MAR260159'],
    ['29MAR260300', 'Europe/Berlin', '2026-03-29T01:00:00.000Z', '29MAR260300'],
    // autumn overlap: the wall time occurs twice → the first occurrence (summer time)
    ['25OCT260230', 'Europe/Berlin', '2026-10-25T00:30:00.000Z', '25OCT260230'],
    ['01NOV260130', 'America/New_York', '2026-11-01T05:30:00.000Z', '01NOV260130'],
    // the default zone has no DST: the same wall times are plain
    ['29MAR260230', 'Asia/Shanghai', '2026-03-28T18:30:00.000Z', '29MAR260230'],
    ['08MAR260230', 'Asia/Shanghai', '2026-03-07T18:30:00.000Z', '08MAR260230'],
  ])('%s in %s is %s (shown as %s)', (text, zone, iso, shown) => {
    const at = parseSisTime(text, zone);
    expect(at.toISOString()).toBe(iso);
    expect(formatSisTime(at, zone)).toBe(shown);
  });

  it('an operation day across the spring gap starts and ends on its cutover', () => {
    const { start, end } = operationDayBounds('2026-03-29', 'Europe/Berlin', '02:30');
    expect([formatSisTime(start, 'Europe/Berlin'), formatSisTime(end, 'Europe/Berlin')]).toEqual(['29MAR260330', '30MAR260229']);
  });
});
