-- A run store as assay wrote it before its schema was managed by Alembic (sqlite3 .dump).
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE assay_migrations (
	name VARCHAR(200) NOT NULL, 
	applied_at FLOAT NOT NULL, 
	PRIMARY KEY (name)
);
INSERT INTO assay_migrations VALUES('m001_initial_tables',1795331162.876124382);
CREATE TABLE runs (
	id VARCHAR(40) NOT NULL, 
	suite VARCHAR(500) NOT NULL, 
	status VARCHAR(20) NOT NULL, 
	created_at FLOAT NOT NULL, 
	finished_at FLOAT, 
	config JSON NOT NULL, 
	summary JSON, 
	PRIMARY KEY (id)
);
INSERT INTO runs VALUES('20240101-000000-abcdef','legacy-suite','completed',1795331162.8772726059,1795331162.8831386566,'{"run":{"concurrency":4}}','{"mean_score":1.0}');
CREATE TABLE executions (
	run_id VARCHAR(40) NOT NULL, 
	case_id VARCHAR(500) NOT NULL, 
	repeat INTEGER NOT NULL, 
	execution JSON NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (run_id, case_id, repeat)
);
INSERT INTO executions VALUES('20240101-000000-abcdef','case-1',0,'{"input":"q","output":"a","messages":[],"trace":[],"retrieved_context":[],"latency_ms":null,"usage":null,"error":null}',1795331162.8830573559);
CREATE TABLE scores (
	run_id VARCHAR(40) NOT NULL, 
	case_id VARCHAR(500) NOT NULL, 
	repeat INTEGER NOT NULL, 
	evaluator VARCHAR(200) NOT NULL, 
	value FLOAT, 
	error_code VARCHAR(100), 
	score JSON NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (run_id, case_id, repeat, evaluator)
);
INSERT INTO scores VALUES('20240101-000000-abcdef','case-1',0,'exact_match',1.0,NULL,'{"name":"exact_match","value":1.0,"raw":null,"scale":null,"label":null,"passed":null,"rationale":null,"hits":[],"misses":[],"details":null,"error":null,"usage":{"calls":0,"cached_calls":0,"retries":0,"prompt_tokens":0,"completion_tokens":0,"cost":0.0},"latency_ms":null,"judge_model":null}',1795331162.8831260203);
CREATE TABLE case_results (
	run_id VARCHAR(40) NOT NULL, 
	case_id VARCHAR(500) NOT NULL, 
	repeat INTEGER NOT NULL, 
	score FLOAT, 
	verdict VARCHAR(20) NOT NULL, 
	"row" JSON NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (run_id, case_id, repeat)
);
INSERT INTO case_results VALUES('20240101-000000-abcdef','case-1',0,1.0,'pass','{"eval_id":"case-1","score":1.0,"verdict":"pass"}',1795331162.8831334113);
COMMIT;
