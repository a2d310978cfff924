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
