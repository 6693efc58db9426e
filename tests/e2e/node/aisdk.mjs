// The Vercel AI SDK (`ai`, `@ai-sdk/openai`) against the gateway, one scenario a run:
// node aisdk.mjs BASE_URL SCENARIO TOKEN. Every prompt carries TOKEN, which the scripted
// upstream echoes. Prints one JSON object: the texts each turn ended with, the tool calls
// the SDK carried out, and the steps of a tool loop.
import { generateText, streamText, tool, stepCountIs, Output } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

const [base, scenario, token] = process.argv.slice(2);
const openai = createOpenAI({ baseURL: base, apiKey: 'e2e-key' });
const calls = [];
const weather = tool({
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    calls.push({ name: 'weather', city });
    return `sunny in ${city}`;
  },
});

const scenarios = {
  // generateText, then streamText
  async text() {
    const model = openai.responses('e2e-scripted-text');
    const plain = await generateText({ model, prompt: `say ${token}` });
    const streamed = streamText({ model, prompt: `again ${token}` });
    let text = '';
    for await (const part of streamed.textStream) text += part;
    return { texts: [plain.text, text] };
  },
  // a multi-step tool loop against an upstream that reasons before its tool call
  async 'tool-loop'() {
    const result = await generateText({
      model: openai.responses('e2e-scripted-think-tools'),
      prompt: `weather in Oslo? ${token}`,
      tools: { weather },
      stopWhen: stepCountIs(3),
    });
    const reasoning = result.steps[0].reasoningText ?? '';
    return { texts: [result.text], steps: result.steps.length, reasoning };
  },
  // the same loop streamed
  async 'tool-loop-streamed'() {
    const result = streamText({
      model: openai.responses('e2e-scripted-think-tools'),
      prompt: `weather in Oslo? ${token}`,
      tools: { weather },
      stopWhen: stepCountIs(3),
    });
    let text = '';
    for await (const part of result.textStream) text += part;
    return { texts: [text], steps: (await result.steps).length };
  },
  // two turns, the second with the first's messages (store at its default: item references)
  async history() {
    const model = openai.responses('e2e-scripted-text');
    const first = await generateText({ model, prompt: `my name is Ada ${token}` });
    const messages = [
      { role: 'user', content: `my name is Ada ${token}` },
      ...first.response.messages,
      { role: 'user', content: `and my name? ${token}` },
    ];
    const second = await generateText({ model, messages });
    return { texts: [first.text, second.text] };
  },
  // structured output
  async structured() {
    const result = await generateText({
      model: openai.responses('e2e-scripted-text'),
      prompt: `answer ${token}`,
      output: Output.object({ schema: z.object({ answer: z.string() }) }),
    });
    return { texts: [], object: result.output };
  },
};

const result = await scenarios[scenario]();
result.calls = calls;
console.log(JSON.stringify(result));
