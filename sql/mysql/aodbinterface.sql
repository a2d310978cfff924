-- AODB interface database: the inbox (cminmsgs) and outbox (coutmsgs) tables
-- the AODB shares with the gateway.
--
-- Written by hand from the vendor DDL (shared/corpus/unisys-sis/aodbinterface_db.sql):
-- same columns, types, defaults, engine and charset, and the same lower-case
-- table names (MariaDB on Linux compares table names case-sensitively; the
-- application uses cminmsgs / coutmsgs). Unlike the vendor script it never
-- drops anything: every statement is IF NOT EXISTS, so applying it again is a
-- no-op and never destroys data.
--
-- Applied by `scripts/services up` to `aodbinterface` as written, and to
-- `aodbinterface_test` (used by the tests) by replacing the quoted database
-- name `aodbinterface` below; keep the name back-quoted exactly as here.

CREATE DATABASE IF NOT EXISTS `aodbinterface`;
USE `aodbinterface`;

CREATE TABLE IF NOT EXISTS `coutmsgs`
(
  `COUTMSGS_ID`               bigint(20) NOT NULL AUTO_INCREMENT,
  `COUTMSGS_CLOB_MSG`         MEDIUMTEXT,
  `COUTMSGS_DATE_INSERTED`    datetime NOT NULL,
  `COUTMSGS_DATE_SENT`        datetime,
  `ROUTINGID`                 VARCHAR(23) NOT NULL,
  `COUTMSGS_TRUEFALS_GROUP`   TINYINT DEFAULT 0 NOT NULL,
  `COUTMSGS_NO_MESSAGES`      TINYINT,
  `COUTMSGS_GROUP_ORDER`      TINYINT,
  `COUTMSGS_GROUP_ID`         SMALLINT,
  `COUTMSGS_FINAL_GROUP_IND`  TINYINT DEFAULT 0 NOT NULL,
  `COUTMSGS_ACK_REQD`         TINYINT DEFAULT 0 NOT NULL,
  `COUTMSGS_ACK_RESEND_TIMES` TINYINT DEFAULT 0 NOT NULL,
  `COUTMSGS_ACK_DATE_RECV`    datetime,
  `COUTMSGS_ENCRYPT`          TINYINT DEFAULT 0 NOT NULL,
  `COUTMSGS_ERROR`            TINYINT DEFAULT 0 NOT NULL,
  PRIMARY KEY (`COUTMSGS_ID`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `cminmsgs`
(
  `CMINMSGS_ID`                  bigint(20) NOT NULL AUTO_INCREMENT,
  `CMINMSGS_CLOB_MSG`            MEDIUMTEXT NOT NULL,
  `CMINMSGS_DATE_RECEIVED`       datetime,
  `CMINMSGS_DATE_PROCESSED`      datetime,
  `CMINMSGS_SUBSYSTEM_NAME`      VARCHAR(4),
  `CMINMSGS_SUBSYSTEM_SEQUENCE`  MEDIUMINT,
  `CMINMSGS_SUBSYSTEM_DATE_SENT` datetime,
  `CMINMSGS_SUBSYSTEM_SUBTYPE`   VARCHAR(4),
  `CMINMSGS_SUBSYSTEM_TYPE`      VARCHAR(4),
  `CMINMSGS_STATUS`              VARCHAR(20),
  PRIMARY KEY (`CMINMSGS_ID`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
