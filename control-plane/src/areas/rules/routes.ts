// Rules routes: the seven operations for each of the fifteen rule types under /domains/{domain}/rules/{type}/, and
// the same seven for the custom rules group under /domains/{domain}/custom-rules/.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CUSTOM_RULE_TYPE, RULE_TYPES, type StoredRuleType } from '@platform/shared/match';
import { loadDomain } from '../../auth/domain-access.js';
import { errorResponses, idSegment, MessageBody } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import { createRule, deleteRule, getRule, listRules, reorderRules, setRuleEnabled, updateRule } from './service.js';
import { EnabledBody, ReorderBody, RuleParams, ruleSchemas } from './schemas.js';
import { registerWafDefaultRoutes } from './waf-default.js';

export default async function ruleRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  for (const type of RULE_TYPES) registerType(app, type, `/domains/:domain/rules/${type}/`, ['rules']);
  // Static paths beside the waf type's `{ruleId}`: the default protection's status and restore.
  registerWafDefaultRoutes(fastify);
  registerType(app, CUSTOM_RULE_TYPE, '/domains/:domain/custom-rules/', ['custom-rules']);
}

function registerType(app: FastifyInstance, type: StoredRuleType, base: string, tags: string[]) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const s = ruleSchemas(type);

  r.get(
    base,
    {
      schema: {
        summary: `List ${type} rules (priority order)`,
        tags,
        params: DomainParams,
        response: { 200: Type.Array(s.rule), ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return listRules(app, domain.id, type);
    },
  );

  r.post(
    base,
    {
      schema: {
        summary: `Create a ${type} rule`,
        tags,
        params: DomainParams,
        body: s.create,
        response: { 200: s.rule, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      return createRule(app, domain, type, request.body as Record<string, unknown>);
    },
  );

  r.patch(
    `${base}reorder`,
    {
      schema: {
        summary: `Reorder ${type} rules`,
        tags,
        params: DomainParams,
        body: ReorderBody,
        response: { 200: Type.Array(s.rule), ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      return reorderRules(app, domain, type, request.body.ids);
    },
  );

  r.get(
    `${base}${idSegment('ruleId')}`,
    {
      schema: {
        summary: `Get a ${type} rule`,
        tags,
        params: RuleParams,
        response: { 200: s.rule, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return getRule(app, domain.id, type, request.params.ruleId);
    },
  );

  r.put(
    `${base}${idSegment('ruleId')}`,
    {
      schema: {
        summary: `Update a ${type} rule`,
        tags,
        params: RuleParams,
        body: s.update,
        response: { 200: s.rule, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      return updateRule(app, domain, type, request.params.ruleId, request.body as Record<string, unknown>);
    },
  );

  r.delete(
    `${base}${idSegment('ruleId')}`,
    {
      schema: {
        summary: `Delete a ${type} rule`,
        tags,
        params: RuleParams,
        response: { 200: MessageBody, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      await deleteRule(app, domain, type, request.params.ruleId);
      return { message: 'rule deleted' };
    },
  );

  r.patch(
    `${base}${idSegment('ruleId')}/enabled`,
    {
      schema: {
        summary: `Enable or disable a ${type} rule`,
        tags,
        params: RuleParams,
        body: EnabledBody,
        response: { 200: s.rule, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      return setRuleEnabled(app, domain, type, request.params.ruleId, request.body.enabled);
    },
  );
}
